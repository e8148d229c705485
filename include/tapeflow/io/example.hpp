#pragma once
// tf.train.Example records: building them (serialize_example) and parsing
// them into tensors with a feature spec, like tf.io.parse_example and
// tf.io.parse_single_example. The protobuf messages stay inside libtapeflow.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tapeflow/core/tensor.hpp"
#include "tapeflow/creation.hpp"

namespace tapeflow::io {

/**
 * The values of one feature: a FloatList, an Int64List or a BytesList.
 * Also the default value of a FixedLenFeature.
 */
using Feature = std::variant<std::vector<float>, std::vector<int64_t>,
                             std::vector<std::string>>;
/** An Example's features by name. */
using Features = std::map<std::string, Feature>;

/** A serialized tf.train.Example holding `features`. */
std::string serialize_example(const Features& features);
/**
 * Every feature of a serialized Example (a feature with no list set comes
 * back as an empty BytesList). A malformed Example is a DataLossError.
 */
Features deserialize_example(std::string_view serialized);

/** A feature's type: float32 or int64 (tapeflow dtypes), or bytes. */
class FeatureDType {
 public:
  /** float32 or int64; parse_example rejects any other with a ValueError. */
  constexpr FeatureDType(DType dtype) : dtype_(dtype) {}  // NOLINT: implicit
  static constexpr FeatureDType bytes() {
    FeatureDType t(float32);
    t.bytes_ = true;
    return t;
  }
  constexpr bool is_bytes() const { return bytes_; }
  constexpr DType dtype() const { return dtype_; }
  std::string name() const;

 private:
  DType dtype_;
  bool bytes_ = false;
};
/** tf.string. */
inline constexpr FeatureDType bytes = FeatureDType::bytes();

/**
 * A feature with shape.numel() values in every Example (tf.io.FixedLenFeature).
 * Without a default a missing feature is an error; the default is one value
 * (repeated) or shape.numel() values, of the feature's type.
 */
struct FixedLenFeature {
  FeatureDType dtype;
  Shape shape;
  std::optional<Feature> default_value = std::nullopt;
};
/** Any number of values per Example (tf.io.VarLenFeature): a SparseTensor. */
struct VarLenFeature {
  FeatureDType dtype;
};
using FeatureSpec = std::variant<FixedLenFeature, VarLenFeature>;
using FeatureSpecs = std::map<std::string, FeatureSpec>;

/** Strings with a shape (a tf.string tensor), row-major. */
struct BytesTensor {
  Shape shape;
  std::vector<std::string> values;
  /** The same strings as a tpf::string_ tensor. */
  Tensor tensor() const { return from_strings(values, shape); }
};

/**
 * COO sparse values (tf.SparseTensor): row i of `indices` (int64, [nnz,
 * rank]) is the position of values[i] in a dense tensor of `dense_shape`.
 * `values` is float32/int64 [nnz], or for bytes features a string_ tensor
 * [nnz] whose strings are also in `bytes_values`.
 */
struct SparseTensor {
  Tensor indices;
  Tensor values;
  std::vector<std::string> bytes_values;
  Shape dense_shape;
};

/** What parse_example returns, by feature name. */
struct ParsedFeatures {
  std::map<std::string, Tensor> dense;       ///< FixedLenFeature float32/int64
  std::map<std::string, BytesTensor> bytes;  ///< FixedLenFeature bytes
  std::map<std::string, SparseTensor> sparse;  ///< VarLenFeature (any type)
};

/**
 * Parses a batch of serialized Examples. Fixed-length features come back
 * stacked, shape [batch] + shape; var-length ones as a SparseTensor with
 * indices (example, position) and dense_shape [batch, longest]. Features not
 * in the spec are ignored. A malformed Example is a DataLossError; a missing
 * feature without default, a feature of the wrong type or length a
 * ValueError; both name the feature and the record's index.
 */
ParsedFeatures parse_example(std::span<const std::string> serialized,
                             const FeatureSpecs& spec);
/**
 * One Example: fixed-length features have exactly their shape; var-length
 * ones have indices [nnz, 1] and dense_shape [length].
 */
ParsedFeatures parse_single_example(std::string_view serialized,
                                    const FeatureSpecs& spec);

}  // namespace tapeflow::io
