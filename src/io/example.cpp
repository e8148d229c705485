// tf.train.Example ⇄ tensors. The generated protobuf (lite) classes are used
// only here; public headers see plain std types.
#include "tapeflow/io/example.hpp"

#include <algorithm>
#include <cstring>

#include "core/checked.hpp"
#include "core/op_error.hpp"
#include "example.pb.h"
#include "ops/composite.hpp"
#include "tapeflow/creation.hpp"

namespace tapeflow::io {

namespace {

// Feature's alternatives, in the variant's order.
constexpr size_t kFloats = 0, kInt64s = 1, kBytes = 2;
constexpr const char* kListNames[] = {"a float_list", "an int64_list",
                                      "a bytes_list"};

size_t alternative(FeatureDType t) {
  if (t.is_bytes()) return kBytes;
  return t.dtype() == float32 ? kFloats : kInt64s;
}

std::string quoted(const std::string& name) {
  return "\"" + name + "\"";
}

/** One validated entry of the spec, with what it collects over the batch. */
struct Column {
  const std::string* name;
  bool fixed = true;
  size_t kind = kFloats;
  Shape shape;        // fixed only
  int64_t count = 0;  // values per record, fixed only
  const Feature* default_value = nullptr;
  // Results.
  Tensor dense;
  std::vector<std::string> strings;  // fixed bytes, or var-len bytes values
  std::vector<float> floats;         // var-len
  std::vector<int64_t> ints;         // var-len
  std::vector<int64_t> indices;      // var-len: (record, position) pairs
  int64_t longest = 0;               // var-len
};

size_t list_size(const Feature& f) {
  return std::visit([](const auto& v) { return v.size(); }, f);
}

Column make_column(const std::string& name, const FeatureSpec& spec,
                   const char* op) {
  Column c;
  c.name = &name;
  const FeatureDType dtype =
      std::visit([](const auto& s) { return s.dtype; }, spec);
  if (!dtype.is_bytes() && dtype.dtype() != float32 && dtype.dtype() != int64)
    throw op_error<ValueError>(
        op, "expected dtype float32, int64 or bytes for feature ", quoted(name),
        ", got ", dtype.name());
  c.kind = alternative(dtype);
  if (const auto* f = std::get_if<FixedLenFeature>(&spec)) {
    for (int64_t d : f->shape)
      if (d < 0)
        throw op_error<ValueError>(
            op,
            "expected a shape without negative extents for "
            "feature ",
            quoted(name), ", got ", f->shape.str());
    c.shape = f->shape;
    c.count = checked_numel(f->shape, op);
    if (f->default_value) {
      const Feature& d = *f->default_value;
      const size_t n = list_size(d);
      if (d.index() != c.kind || (n != 1 && n != size_t(c.count)))
        throw op_error<ValueError>(op, "expected a default for ", quoted(name),
                                   " of 1 or ", c.count, " values of ",
                                   dtype.name(), ", got ", n, " in ",
                                   kListNames[d.index()]);
      c.default_value = &d;
    }
  } else {
    c.fixed = false;
  }
  return c;
}

struct Record {
  const char* op;
  size_t index;
};

[[noreturn]] void wrong_kind(const Record& r, const Column& c,
                             const char* got) {
  throw op_error<ValueError>(r.op, "expected feature ", quoted(*c.name),
                             " of record ", r.index, " to be ",
                             kListNames[c.kind], ", got ", got);
}

[[noreturn]] void wrong_count(const Record& r, const Column& c, size_t got) {
  throw op_error<ValueError>(r.op, "expected ", c.count, " values (shape ",
                             c.shape.str(), ") for feature ", quoted(*c.name),
                             " of record ", r.index, ", got ", got);
}

const char* kind_name(pb::Feature::KindCase k) {
  switch (k) {
    case pb::Feature::kFloatList:
      return kListNames[kFloats];
    case pb::Feature::kInt64List:
      return kListNames[kInt64s];
    case pb::Feature::kBytesList:
      return kListNames[kBytes];
    case pb::Feature::KIND_NOT_SET:
      break;
  }
  return "no list";
}

pb::Feature::KindCase kind_case(size_t kind) {
  return kind == kFloats   ? pb::Feature::kFloatList
         : kind == kInt64s ? pb::Feature::kInt64List
                           : pb::Feature::kBytesList;
}

/** Fills record r's row of a fixed-length column from its default. */
void fill_default(Column& c, size_t row) {
  const Feature& d = *c.default_value;
  const size_t n = static_cast<size_t>(c.count);
  const bool one = list_size(d) == 1;
  if (c.kind == kBytes) {
    const auto& v = std::get<kBytes>(d);
    for (size_t i = 0; i < n; ++i) c.strings[row * n + i] = v[one ? 0 : i];
  } else if (c.kind == kFloats) {
    const auto& v = std::get<kFloats>(d);
    float* out = c.dense.data<float>() + row * n;
    for (size_t i = 0; i < n; ++i) out[i] = v[one ? 0 : i];
  } else {
    const auto& v = std::get<kInt64s>(d);
    int64_t* out = c.dense.data<int64_t>() + row * n;
    for (size_t i = 0; i < n; ++i) out[i] = v[one ? 0 : i];
  }
}

template <class T, class Field>
void take_fixed(Column& c, const Record& r, const Field& values, T* out) {
  if (values.size() != c.count) wrong_count(r, c, size_t(values.size()));
  if (c.count) std::memcpy(out, values.data(), size_t(c.count) * sizeof(T));
}

void take_var(Column& c, const Record& r, const pb::Feature* f) {
  size_t n = 0;
  if (f && f->kind_case() != pb::Feature::KIND_NOT_SET) {
    if (c.kind == kFloats) {
      const auto& v = f->float_list().value();
      c.floats.insert(c.floats.end(), v.begin(), v.end());
      n = size_t(v.size());
    } else if (c.kind == kInt64s) {
      const auto& v = f->int64_list().value();
      c.ints.insert(c.ints.end(), v.begin(), v.end());
      n = size_t(v.size());
    } else {
      const auto& v = f->bytes_list().value();
      c.strings.insert(c.strings.end(), v.begin(), v.end());
      n = size_t(v.size());
    }
  }
  for (size_t i = 0; i < n; ++i) {
    c.indices.push_back(int64_t(r.index));
    c.indices.push_back(int64_t(i));
  }
  c.longest = std::max(c.longest, int64_t(n));
}

void take(Column& c, const Record& r, const pb::Example& ex) {
  const auto& map = ex.features().feature();
  const auto it = map.find(*c.name);
  const pb::Feature* f = it == map.end() ? nullptr : &it->second;
  if (f && f->kind_case() != pb::Feature::KIND_NOT_SET &&
      f->kind_case() != kind_case(c.kind))
    wrong_kind(r, c, kind_name(f->kind_case()));
  if (!c.fixed) return take_var(c, r, f);
  if (!f) {
    if (!c.default_value)
      throw op_error<ValueError>(r.op, "expected feature ", quoted(*c.name),
                                 " in record ", r.index,
                                 " (it has no default), got none");
    return fill_default(c, r.index);
  }
  const size_t n = size_t(c.count);
  if (f->kind_case() == pb::Feature::KIND_NOT_SET) {
    if (n != 0) wrong_count(r, c, 0);
  } else if (c.kind == kFloats) {
    take_fixed(c, r, f->float_list().value(),
               c.dense.data<float>() + r.index * n);
  } else if (c.kind == kInt64s) {
    take_fixed(c, r, f->int64_list().value(),
               c.dense.data<int64_t>() + r.index * n);
  } else {
    const auto& v = f->bytes_list().value();
    if (size_t(v.size()) != n) wrong_count(r, c, size_t(v.size()));
    for (size_t i = 0; i < n; ++i) c.strings[r.index * n + i] = v[int(i)];
  }
}

void parse_into(pb::Example& ex, std::string_view bytes, const Record& r) {
  if (bytes.size() > size_t(INT32_MAX) ||
      !ex.ParseFromArray(bytes.data(), int(bytes.size())))
    throw op_error<DataLossError>(
        r.op, "expected a serialized tf.train.Example, got ", bytes.size(),
        " bytes that do not parse as one (record ", r.index, ")");
}

ParsedFeatures parse_records(std::span<const std::string_view> records,
                             const FeatureSpecs& spec, bool batched,
                             const char* op) {
  const auto batch = int64_t(records.size());
  std::vector<Column> columns;
  columns.reserve(spec.size());
  for (const auto& [name, s] : spec) {
    Column c = make_column(name, s, op);
    if (c.fixed) {
      Shape full;
      if (batched) full.push_back(batch);
      for (int64_t d : c.shape) full.push_back(d);
      if (c.kind == kBytes)
        c.strings.resize(
            size_t(checked_mul(batch, c.count, op, "the batch's values")));
      else
        c.dense = empty(full, c.kind == kFloats ? float32 : int64);
    }
    columns.push_back(std::move(c));
  }
  pb::Example ex;
  for (size_t i = 0; i < records.size(); ++i) {
    const Record r{op, i};
    parse_into(ex, records[i], r);
    for (Column& c : columns) take(c, r, ex);
  }

  ParsedFeatures out;
  for (Column& c : columns) {
    if (c.fixed) {
      if (c.kind != kBytes) {
        out.dense.emplace(*c.name, std::move(c.dense));
        continue;
      }
      Shape full;
      if (batched) full.push_back(batch);
      for (int64_t d : c.shape) full.push_back(d);
      out.bytes.emplace(*c.name, BytesTensor{full, std::move(c.strings)});
      continue;
    }
    SparseTensor st;
    const auto nnz = int64_t(c.indices.size() / 2);
    if (batched) {
      st.indices = from_vector(c.indices, {nnz, 2});
      st.dense_shape = {batch, c.longest};
    } else {
      std::vector<int64_t> pos(static_cast<size_t>(nnz));
      for (int64_t k = 0; k < nnz; ++k) pos[size_t(k)] = c.indices[2 * k + 1];
      st.indices = from_vector(pos, {nnz, 1});
      st.dense_shape = {c.longest};
    }
    if (c.kind == kFloats)
      st.values = from_vector(c.floats, {nnz});
    else if (c.kind == kInt64s)
      st.values = from_vector(c.ints, {nnz});
    else {
      st.values = from_strings(c.strings, {nnz});
      st.bytes_values = std::move(c.strings);
    }
    out.sparse.emplace(*c.name, std::move(st));
  }
  return out;
}

/** parse_records, an allocation too large for memory named as `op`. */
ParsedFeatures parse(std::span<const std::string_view> records,
                     const FeatureSpecs& spec, bool batched, const char* op) {
  return composite(op,
                   [&] { return parse_records(records, spec, batched, op); });
}

}  // namespace

std::string FeatureDType::name() const {
  return bytes_ ? "bytes" : std::string(dtype_name(dtype_));
}

ParsedFeatures parse_example(std::span<const std::string> serialized,
                             const FeatureSpecs& spec) {
  std::vector<std::string_view> views(serialized.begin(), serialized.end());
  return parse(views, spec, true, "parse_example");
}

ParsedFeatures parse_single_example(std::string_view serialized,
                                    const FeatureSpecs& spec) {
  return parse({&serialized, 1}, spec, false, "parse_single_example");
}

std::string serialize_example(const Features& features) {
  pb::Example ex;
  auto& map = *ex.mutable_features()->mutable_feature();
  for (const auto& [name, values] : features) {
    pb::Feature& f = map[name];
    if (const auto* v = std::get_if<kFloats>(&values)) {
      f.mutable_float_list()->mutable_value()->Add(v->begin(), v->end());
    } else if (const auto* v = std::get_if<kInt64s>(&values)) {
      f.mutable_int64_list()->mutable_value()->Add(v->begin(), v->end());
    } else {
      auto& list = *f.mutable_bytes_list()->mutable_value();
      for (const auto& s : std::get<kBytes>(values)) list.Add()->assign(s);
    }
  }
  // protobuf refuses messages of 2 GiB or more: SerializeAsString would log
  // that and return "", which reads back as an Example without features.
  if (const size_t bytes = ex.ByteSizeLong(); bytes > size_t(INT32_MAX))
    throw op_error<ValueError>("serialize_example",
                               "expected an Example under 2 GiB, got ", bytes,
                               " bytes");
  return ex.SerializeAsString();
}

Features deserialize_example(std::string_view serialized) {
  pb::Example ex;
  parse_into(ex, serialized, {"deserialize_example", 0});
  Features out;
  for (const auto& [name, f] : ex.features().feature()) {
    switch (f.kind_case()) {
      case pb::Feature::kFloatList: {
        const auto& v = f.float_list().value();
        out[name] = std::vector<float>(v.begin(), v.end());
        break;
      }
      case pb::Feature::kInt64List: {
        const auto& v = f.int64_list().value();
        out[name] = std::vector<int64_t>(v.begin(), v.end());
        break;
      }
      case pb::Feature::kBytesList:
      case pb::Feature::KIND_NOT_SET: {
        const auto& v = f.bytes_list().value();
        out[name] = std::vector<std::string>(v.begin(), v.end());
        break;
      }
    }
  }
  return out;
}

}  // namespace tapeflow::io
