// tf.train.Example: serialize_example / deserialize_example, parse_example and
// parse_single_example against hand-computed tensors, and their errors.
#include "support/check.hpp"
#include "tapeflow/io/example.hpp"

namespace io = tpf::io;

namespace {

using Floats = std::vector<float>;
using Ints = std::vector<int64_t>;
using Strings = std::vector<std::string>;

/** Checks that fn throws E whose message starts with "[op] expected" and
 * contains every part. */
template <class E, class Fn>
void check_error(Fn fn, const std::string& op,
                 const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL("expected an error from " << op);
  } catch (const E& e) {
    const std::string msg = e.what();
    CHECK_MESSAGE(msg.rfind("[" + op + "] expected", 0) == 0, msg);
    for (const auto& p : parts)
      CHECK_MESSAGE(msg.find(p) != std::string::npos, (msg + " lacks " + p));
  }
}

/** A length-delimited protobuf field: tag byte, one-byte length, bytes. */
std::string field(char tag, const std::string& bytes) {
  std::string out;
  out.push_back(tag);
  out.push_back(static_cast<char>(bytes.size()));
  out.append(bytes);
  return out;
}

// A tf.train.Example written out field by field (what TensorFlow's
// example.proto defines), independent of our generated code:
// Example{features: Features{feature: {"a": Feature{int64_list: [1, 300]}}}}.
std::string hand_encoded_example() {
  // Int64List.value is field 1, packed: varints 1 and 300 (0xac 0x02).
  const std::string int64_list = field('\x0a', std::string("\x01\xac\x02", 3));
  // Feature.int64_list is field 3; a map entry has key 1 and value 2.
  const std::string entry =
      field('\x0a', "a") + field('\x12', field('\x1a', int64_list));
  // Features.feature is field 1, Example.features is field 1.
  return field('\x0a', field('\x0a', entry));
}

}  // namespace

TEST_CASE("serialize_example / deserialize_example round trip") {
  const io::Features f = {
      {"floats", Floats{1.5f, -2.f, 0.f}},
      {"ints", Ints{-1, 0, int64_t{1} << 40}},
      {"bytes", Strings{"", std::string("a\0b", 3), "utf-8 ok"}},
      {"empty", Floats{}},
  };
  const std::string s = io::serialize_example(f);
  const io::Features back = io::deserialize_example(s);
  CHECK(back.at("floats") == f.at("floats"));
  CHECK(back.at("ints") == f.at("ints"));
  CHECK(back.at("bytes") == f.at("bytes"));
  CHECK(back.at("empty") == f.at("empty"));
  CHECK(io::deserialize_example("").empty());  // an empty Example is valid
}

TEST_CASE("TensorFlow's wire format: hand-encoded bytes parse, ours match") {
  const std::string hand = hand_encoded_example();
  const io::Features f = io::deserialize_example(hand);
  REQUIRE(f.size() == 1);
  CHECK(std::get<Ints>(f.at("a")) == Ints{1, 300});
  CHECK(io::serialize_example({{"a", Ints{1, 300}}}) == hand);
}

TEST_CASE("parse_single_example: fixed, var-len, bytes, defaults") {
  const std::string s = io::serialize_example({
      {"image", Floats{1, 2, 3, 4, 5, 6}},
      {"label", Ints{7}},
      {"tags", Ints{3, 1, 4, 1}},
      {"name", Strings{"cat"}},
      {"words", Strings{"a", "bb"}},
      {"ignored", Floats{9}},
  });
  const io::FeatureSpecs spec = {
      {"image", io::FixedLenFeature{tpf::float32, {2, 3}}},
      {"label", io::FixedLenFeature{tpf::int64, {}}},
      {"tags", io::VarLenFeature{tpf::int64}},
      {"name", io::FixedLenFeature{io::bytes, {}}},
      {"words", io::VarLenFeature{io::bytes}},
      {"weight", io::FixedLenFeature{tpf::float32, {2}, Floats{0.5f}}},
      {"lang", io::FixedLenFeature{io::bytes, {1}, Strings{"en"}}},
      {"none", io::VarLenFeature{tpf::float32}},
  };
  const io::ParsedFeatures p = io::parse_single_example(s, spec);
  CHECK_CLOSE(p.dense.at("image"), tpf::tensor<float>({{1, 2, 3}, {4, 5, 6}}));
  CHECK(p.dense.at("label").shape() == tpf::Shape{});
  CHECK(p.dense.at("label").dtype() == tpf::int64);
  CHECK(p.dense.at("label").item<int64_t>() == 7);
  CHECK_CLOSE(p.dense.at("weight"), tpf::tensor<float>({0.5f, 0.5f}));
  const auto& tags = p.sparse.at("tags");
  CHECK(tags.indices.shape() == tpf::Shape{4, 1});
  CHECK(tags.indices.to_vector<int64_t>() == Ints{0, 1, 2, 3});
  CHECK(tags.values.dtype() == tpf::int64);
  CHECK(tags.values.to_vector<int64_t>() == Ints{3, 1, 4, 1});
  CHECK(tags.dense_shape == tpf::Shape{4});
  CHECK(p.bytes.at("name").shape == tpf::Shape{});
  CHECK(p.bytes.at("name").values == Strings{"cat"});
  CHECK(p.bytes.at("lang").values == Strings{"en"});
  CHECK(p.bytes.at("lang").tensor().item<std::string>() == "en");
  const auto& words = p.sparse.at("words");
  CHECK(words.values.to_strings() == Strings{"a", "bb"});
  CHECK(words.bytes_values == Strings{"a", "bb"});
  CHECK(words.indices.to_vector<int64_t>() == Ints{0, 1});
  const auto& none = p.sparse.at("none");
  CHECK(none.indices.shape() == tpf::Shape{0, 1});
  CHECK(none.values.shape() == tpf::Shape{0});
  CHECK(none.dense_shape == tpf::Shape{0});
  CHECK(p.dense.count("ignored") == 0);
}

TEST_CASE("parse_example: a batch is stacked; var-len is [batch, longest]") {
  const std::vector<std::string> batch = {
      io::serialize_example({{"x", Floats{1, 2}},
                             {"v", Floats{10}},
                             {"s", Strings{"p", "q"}},
                             {"id", Ints{5}}}),
      io::serialize_example({{"x", Floats{3, 4}}, {"s", Strings{"r", "s"}}}),
      io::serialize_example({{"x", Floats{5, 6}},
                             {"v", Floats{20, 30, 40}},
                             {"s", Strings{"t", "u"}},
                             {"id", Ints{6}}}),
  };
  const io::FeatureSpecs spec = {
      {"x", io::FixedLenFeature{tpf::float32, {2}}},
      {"v", io::VarLenFeature{tpf::float32}},
      {"s", io::FixedLenFeature{io::bytes, {2}}},
      {"id", io::FixedLenFeature{tpf::int64, {1}, Ints{-1}}},
  };
  const io::ParsedFeatures p = io::parse_example(batch, spec);
  CHECK_CLOSE(p.dense.at("x"), tpf::tensor<float>({{1, 2}, {3, 4}, {5, 6}}));
  CHECK(p.dense.at("id").shape() == tpf::Shape{3, 1});
  CHECK(p.dense.at("id").to_vector<int64_t>() == Ints{5, -1, 6});
  const auto& v = p.sparse.at("v");
  CHECK(v.indices.shape() == tpf::Shape{4, 2});
  CHECK(v.indices.to_vector<int64_t>() == Ints{0, 0, 2, 0, 2, 1, 2, 2});
  CHECK(v.values.to_vector<float>() == Floats{10, 20, 30, 40});
  CHECK(v.dense_shape == tpf::Shape{3, 3});
  CHECK(p.bytes.at("s").shape == tpf::Shape{3, 2});
  CHECK(p.bytes.at("s").values == Strings{"p", "q", "r", "s", "t", "u"});
  CHECK(p.bytes.at("s").tensor().shape() == tpf::Shape{3, 2});
  // An empty batch gives empty results of the right shapes.
  const io::ParsedFeatures e = io::parse_example({}, spec);
  CHECK(e.dense.at("x").shape() == tpf::Shape{0, 2});
  CHECK(e.sparse.at("v").dense_shape == tpf::Shape{0, 0});
}

TEST_CASE("parse_example errors name the feature and the record") {
  const std::vector<std::string> batch = {
      io::serialize_example({{"x", Floats{1, 2}}}),
      io::serialize_example({{"x", Floats{1}}}),
  };
  const std::string op = "parse_example";
  check_error<tpf::ValueError>(
      [&] {
        io::parse_example(batch,
                          {{"x", io::FixedLenFeature{tpf::float32, {2}}}});
      },
      op, {"2 values (shape (2,))", "\"x\"", "record 1", "got 1"});
  check_error<tpf::ValueError>(
      [&] {
        io::parse_example(batch, {{"y", io::FixedLenFeature{tpf::int64, {}}}});
      },
      op, {"\"y\"", "record 0", "no default"});
  check_error<tpf::ValueError>(
      [&] {
        io::parse_example(batch, {{"x", io::FixedLenFeature{tpf::int64, {2}}}});
      },
      op, {"\"x\"", "record 0", "an int64_list, got a float_list"});
  check_error<tpf::ValueError>(
      [&] {
        io::parse_example(batch, {{"x", io::VarLenFeature{io::bytes}}});
      },
      op, {"\"x\"", "a bytes_list, got a float_list"});
  const std::vector<std::string> broken = {batch[0], "\xff\xff garbage"};
  check_error<tpf::DataLossError>([&] { io::parse_example(broken, {}); }, op,
                                  {"serialized tf.train.Example", "record 1"});
  check_error<tpf::DataLossError>(
      [&] { io::deserialize_example("\x0a\x05\x01"); }, "deserialize_example",
      {"serialized tf.train.Example"});
  // Bad specs.
  check_error<tpf::ValueError>(
      [&] {
        io::parse_single_example("", {{"z", io::VarLenFeature{tpf::int32}}});
      },
      "parse_single_example", {"\"z\"", "got int32"});
  check_error<tpf::ValueError>(
      [&] {
        io::parse_single_example(
            "", {{"z", io::FixedLenFeature{tpf::float32, {3}, Floats{1, 2}}}});
      },
      "parse_single_example", {"default", "\"z\"", "1 or 3 values"});
  check_error<tpf::ValueError>(
      [&] {
        io::parse_single_example(
            "", {{"z", io::FixedLenFeature{tpf::float32, {1}, Ints{1}}}});
      },
      "parse_single_example", {"default", "an int64_list"});
}
