// String tensors: creation, printing, concatenation with broadcasting,
// comparison, where, shape ops, tf.strings' functions, a vocabulary, and
// the errors every other op gives them.
#include <algorithm>
#include <sstream>

#include "support/check.hpp"

namespace {
using Strings = std::vector<std::string>;

tpf::Tensor words() {
  return tpf::tensor({std::string("Hello"), std::string("World")});
}
}  // namespace

TEST_CASE("string tensors are made from literals and vectors and read back") {
  const auto s = words();
  CHECK(s.dtype() == tpf::string_);
  CHECK(s.shape() == tpf::Shape{2});
  CHECK(s.to_strings() == Strings{"Hello", "World"});
  CHECK(s.to_vector<std::string>() == Strings{"Hello", "World"});
  const auto hw = tpf::constant("Hello World!");
  CHECK(hw.rank() == 0);
  CHECK(hw.item<std::string>() == "Hello World!");
  const auto grid =
      tpf::tensor<std::string>({{"a", "b", "c"}, {"d", "e", "f"}});
  CHECK(grid.shape() == tpf::Shape{2, 3});
  CHECK(tpf::transpose(grid).to_strings() ==
        Strings{"a", "d", "b", "e", "c", "f"});  // a strided view, copied
  CHECK(tpf::slice(grid, {1, 1}, {1, 2}).to_strings() == Strings{"e", "f"});
  CHECK(tpf::reshape(grid, {3, 2}).contiguous().to_strings()[4] == "e");
  CHECK(tpf::from_strings({"x", "y", "z", "w"}, {2, 2}).to_strings()[3] == "w");
  CHECK(tpf::zeros_like(grid).to_strings() == Strings(6, ""));
  // An empty strided view copies to nothing (found by the ops fuzzer).
  const auto none = tpf::transpose(tpf::from_strings({}, {0, 2}));
  CHECK(none.contiguous().shape() == tpf::Shape{2, 0});
  CHECK(
      tpf::Variable(tpf::slice(tpf::transpose(grid), {0, 0}, {3, 0})).shape() ==
      tpf::Shape{3, 0});
  testing::expect_error<tpf::ShapeError>(
      [] { (void)tpf::from_strings({"x"}, {2}); }, "[from_strings]");
  testing::expect_error<tpf::DTypeError>([&] { (void)s.to_vector<double>(); },
                                         "[to_vector]");
  testing::expect_error<tpf::DTypeError>(
      [] { (void)tpf::ones({2}).to_strings(); }, "[to_strings]");
}

TEST_CASE("printing quotes and escapes the text") {
  std::ostringstream os;
  os << tpf::tensor({std::string("say \"hi\""), std::string("a\nb")});
  CHECK(os.str() ==
        "Tensor([\"say \\\"hi\\\"\",       \"a\\nb\"], shape=(2,), "
        "dtype=string)");
  std::ostringstream one;
  one << tpf::constant("Hello World!");
  CHECK(one.str() == "Tensor(\"Hello World!\", shape=(), dtype=string)");
}

TEST_CASE("+ concatenates with broadcasting; equal, not_equal and where") {
  const auto s = words();
  const auto c = s + tpf::tensor({std::string(" a"), std::string(" b")});
  CHECK(c.to_strings() == Strings{"Hello a", "World b"});
  CHECK((tpf::constant("Hello") + tpf::constant(" ") + tpf::constant("World"))
            .item<std::string>() == "Hello World");  // the seed's hello + world
  CHECK((s + "!").to_strings() == Strings{"Hello!", "World!"});
  CHECK(("<" + s).to_strings() == Strings{"<Hello", "<World"});
  const auto column = tpf::reshape(s, {2, 1});
  const auto table = column + tpf::tensor({std::string("1"), std::string("2"),
                                           std::string("3")});
  CHECK(table.shape() == tpf::Shape{2, 3});
  CHECK(table.to_strings() ==
        Strings{"Hello1", "Hello2", "Hello3", "World1", "World2", "World3"});
  CHECK(tpf::equal(s, std::string("Hello")).to_vector<bool>() ==
        std::vector<bool>{true, false});
  CHECK(tpf::not_equal(s, tpf::tensor({std::string("Hello"), std::string("x")}))
            .to_vector<bool>() == std::vector<bool>{false, true});
  const auto picked =
      tpf::where(tpf::tensor({true, false}), s, tpf::constant("?"));
  CHECK(picked.to_strings() == Strings{"Hello", "?"});
  CHECK(tpf::concat({s, tpf::constant("x") + tpf::reshape(s, {2})}, 0)
            .to_strings() == Strings{"Hello", "World", "xHello", "xWorld"});
  CHECK(tpf::stack({s, s}, 1).to_strings() ==
        Strings{"Hello", "Hello", "World", "World"});
  CHECK(tpf::gather(s, tpf::tensor<int64_t>({1, 1, 0})).to_strings() ==
        Strings{"World", "World", "Hello"});
  CHECK(tpf::unstack(s)[1].item<std::string>() == "World");
  tpf::Variable v(s);
  v.assign(tpf::tensor({std::string("new"), std::string("text")}));
  CHECK(v.to_strings() == Strings{"new", "text"});
  CHECK(s.to_strings() == Strings{"Hello", "World"});
}

TEST_CASE("every other op refuses strings, naming itself") {
  const auto s = words();
  using E = tpf::DTypeError;
  testing::expect_error<E>([&] { (void)(s - s); }, "[sub]");
  testing::expect_error<E>([&] { (void)(s * s); }, "[mul]");
  testing::expect_error<E>([&] { (void)tpf::exp(s); }, "[exp]");
  testing::expect_error<E>([&] { (void)tpf::sum(s); }, "[sum");
  testing::expect_error<E>([&] { (void)tpf::less(s, s); }, "[less]");
  testing::expect_error<E>([&] { (void)tpf::logical_not(s); }, "[logical_not]");
  testing::expect_error<E>(
      [&] {
        (void)tpf::matmul(tpf::reshape(s, {1, 2}), tpf::reshape(s, {2, 1}));
      },
      "[matmul");
  testing::expect_error<E>([&] { (void)(s + 1.0); }, "[add]");
  testing::expect_error<E>([&] { (void)(s + tpf::ones({2})); }, "[add]");
  testing::expect_error<E>([&] { (void)tpf::cast(s, tpf::float32); }, "[cast]");
  testing::expect_error<E>(
      [&] { (void)tpf::cast(tpf::ones({1}), tpf::string_); }, "[cast]");
  testing::expect_error<E>([&] { (void)tpf::ones({2}, tpf::string_); },
                           "[full]");
  testing::expect_error<E>(
      [] {
        (void)tpf::where(tpf::constant("x"), tpf::ones({1}), tpf::ones({1}));
      },
      "[where]");
  testing::expect_error<tpf::DeviceError>(
      [&] { (void)s.to(tpf::Device::cuda(0)); }, "[to]");
  testing::expect_error<E>(
      [&] {
        tpf::io::save_npz("/tmp/never_written.npz", {{"s", s}});
      },
      "[save_npz]");
  testing::expect_error<E>([] { (void)tpf::scalar(1.0, tpf::string_); },
                           "[scalar]");
  testing::expect_error<E>([] { (void)tpf::eye(2, 2, tpf::string_); }, "[");
  testing::expect_error<E>(
      [] { (void)tpf::random_uniform({2}, 0.0, 1.0, tpf::string_); }, "[");
  testing::expect_error<E>(
      [] { (void)tpf::one_hot(tpf::tensor({1}), 3, 1.0, 0.0, tpf::string_); },
      "[one_hot]");
  testing::expect_error<E>([] { (void)tpf::arange(0, 3, 1, tpf::string_); },
                           "[");
  testing::expect_error<E>([&] { (void)tpf::argmax(s); }, "[argmax]");
  testing::expect_error<E>([&] { (void)tpf::nn::softmax(s); }, "[softmax]");
  testing::expect_error<E>([&] { (void)tpf::nn::relu(s); }, "[relu]");
  testing::expect_error<E>([&] { (void)tpf::abs(s); }, "[abs]");
  testing::expect_error<E>([&] { (void)tpf::sign(s); }, "[sign]");
  auto shuffled = tpf::shuffle(s).to_strings();  // rows move, as in TF
  std::sort(shuffled.begin(), shuffled.end());
  CHECK(shuffled == Strings{"Hello", "World"});
  CHECK(tpf::empty({2}, tpf::string_).to_strings() == Strings(2, ""));
  // Not recorded, not differentiable.
  tpf::GradientTape tape;
  CHECK_THROWS(tape.watch(s));
}

TEST_CASE("tf.strings: join, split, length, to_number, substr, case, regex") {
  namespace str = tpf::strings;
  const auto grid = tpf::tensor<std::string>({{"a", "b"}, {"c", "d"}});
  CHECK(str::join(grid, "-").to_strings() == Strings{"a-b", "c-d"});
  CHECK(str::join(grid, "", 0).to_strings() == Strings{"ac", "bd"});
  CHECK(str::join({words(), words()}, "+").to_strings() ==
        Strings{"Hello+Hello", "World+World"});
  CHECK(str::split(tpf::constant("  the quick\tfox ")).to_strings() ==
        Strings{"the", "quick", "fox"});
  CHECK(str::split(tpf::constant("a,,b"), ",").to_strings() ==
        Strings{"a", "", "b"});
  const auto rows =
      str::split(tpf::tensor({std::string("a b c"), std::string("d")}));
  CHECK(rows.shape() == tpf::Shape{2, 3});
  CHECK(rows.to_strings() == Strings{"a", "b", "c", "d", "", ""});
  CHECK(str::length(words()).to_vector<int32_t>() ==
        std::vector<int32_t>{5, 5});
  CHECK(str::length(words()).dtype() == tpf::int32);
  const auto numbers = tpf::tensor({std::string("1.5"), std::string("-2e3")});
  CHECK(str::to_number(numbers).to_vector<float>() ==
        std::vector<float>{1.5f, -2000.0f});
  CHECK(str::to_number(tpf::constant("42"), tpf::int64).item<int64_t>() == 42);
  testing::expect_error<tpf::ValueError>(
      [] {
        (void)str::to_number(
            tpf::tensor({std::string("1"), std::string("x1")}));
      },
      "[to_number]");
  testing::expect_error<tpf::ValueError>(
      [] { (void)str::to_number(tpf::constant("3000000000"), tpf::int32); },
      "[to_number]");
  CHECK(str::substr(words(), 1, 3).to_strings() == Strings{"ell", "orl"});
  CHECK(str::substr(words(), 3, 99).to_strings() == Strings{"lo", "ld"});
  testing::expect_error<tpf::IndexError>(
      [] { (void)str::substr(tpf::constant("ab"), 3, 1); }, "[substr]");
  CHECK(str::lower(words()).to_strings() == Strings{"hello", "world"});
  CHECK(str::upper(words()).to_strings() == Strings{"HELLO", "WORLD"});
  CHECK(str::regex_full_match(words(), "H.*o").to_vector<bool>() ==
        std::vector<bool>{true, false});
  testing::expect_error<tpf::ValueError>(
      [] { (void)str::regex_full_match(words(), "(unclosed"); },
      "[regex_full_match]");
  testing::expect_error<tpf::ValueError>(
      [] { (void)str::regex_full_match(words(), "(a)\\1"); },
      "[regex_full_match] expected a valid RE2 pattern, got \"(a)\\1\"");
  // Long text, nested and catastrophic patterns: linear-time automata, so a
  // backtracking matcher's hours (2^n for "(a*)*b") are microseconds here.
  const auto long_text = tpf::constant(std::string(1 << 20, 'a'));
  CHECK(str::regex_full_match(long_text, "((((a)))|b)*").item<bool>());
  CHECK_FALSE(str::regex_full_match(long_text, "(a*)*b").item<bool>());
  CHECK_FALSE(str::regex_full_match(tpf::constant(std::string(30, 'a')),
                                    "(a|aa)*(a|aa)*c")
                  .item<bool>());
  testing::expect_error<tpf::DTypeError>(
      [] { (void)str::length(tpf::ones({2})); }, "[length]");
}

TEST_CASE("a vocabulary maps tokens to ids: 0 padding, 1 unknown") {
  const tpf::strings::Vocabulary vocab({"the", "cat", "sat"});
  CHECK(vocab.size() == 5);
  const auto tokens = tpf::strings::split(
      tpf::tensor({std::string("the cat sat"), std::string("a cat")}));
  CHECK(vocab.lookup(tokens).to_vector<int64_t>() ==
        std::vector<int64_t>{2, 3, 4, 1, 3, 0});
}
