#pragma once
// String tensors (dtype tpf::string_, CPU only): text ops in the manner of
// tf.strings. Creation: tpf::tensor({std::string("a"), ...}),
// tpf::constant("text"), tpf::from_strings(values, shape). `+` concatenates
// elementwise with broadcasting; equal/not_equal compare; where selects;
// reshape, transpose, slice, concat, stack and gather move text as they move
// numbers. Every other math op refuses strings with a DTypeError naming it,
// and no string op has a gradient.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tapeflow/core/tensor.hpp"

namespace tapeflow {

/** Elementwise concatenation with a string on either side. */
Tensor operator+(const Tensor& s, const std::string& text);
Tensor operator+(const std::string& text, const Tensor& s);
/** Elementwise comparison of a string tensor with one string (bool_). */
Tensor equal(const Tensor& s, const std::string& text);
Tensor not_equal(const Tensor& s, const std::string& text);

namespace strings {

/**
 * The elements along `axis` joined with `separator` (tf.strings.reduce_join):
 * the axis goes away; axis -1 is the last.
 */
Tensor join(const Tensor& s, const std::string& separator = "",
            int64_t axis = -1);
/** Elementwise a + separator + b + ... of same-shaped tensors
 * (tf.strings.join). */
Tensor join(const std::vector<Tensor>& parts,
            const std::string& separator = "");
/**
 * Pieces of each string split at `separator` (empty: runs of whitespace, and
 * empty pieces dropped, as tf.strings.split with no sep). A 0-d input gives
 * a 1-D tensor; a 1-D input a (n, longest) tensor padded with "" (a ragged
 * result's to_tensor()).
 */
Tensor split(const Tensor& s, const std::string& separator = "");
/** Bytes per string, int32 (tf.strings.length). */
Tensor length(const Tensor& s);
/**
 * Each string parsed as a number of `dtype` (tf.strings.to_number), by TF's
 * rules: white space around it and a sign are allowed, floats may be
 * hexadecimal ("0x10") and go to +-inf or +-0 past the dtype's range;
 * ValueError naming the first string that is not a number, or an integer
 * that does not fit.
 */
Tensor to_number(const Tensor& s, DType dtype = float32);
/**
 * Bytes [pos, pos + len) of each string, len clipped at the end
 * (tf.strings.substr). As in TF, a negative pos counts from the end and a
 * negative len takes the rest; IndexError when pos is outside a string.
 */
Tensor substr(const Tensor& s, int64_t pos, int64_t len);
/** ASCII letters lowered / raised, other bytes kept. */
Tensor lower(const Tensor& s);
Tensor upper(const Tensor& s);
/**
 * Whether each whole string matches `pattern`, in RE2 syntax as
 * tf.strings.regex_full_match (ValueError for a bad pattern). Matching takes
 * time linear in the text whatever the pattern (no backtracking), so any
 * length of text is fine.
 */
Tensor regex_full_match(const Tensor& s, const std::string& pattern);

/**
 * A fixed vocabulary mapping tokens to int64 ids (Keras' StringLookup):
 * id 0 is padding (the empty string), 1 the out-of-vocabulary id, then the
 * tokens in order from 2.
 */
class Vocabulary {
 public:
  explicit Vocabulary(const std::vector<std::string>& tokens);
  /** The ids of a string tensor's tokens, same shape, int64. */
  Tensor lookup(const Tensor& tokens) const;
  /** Ids in use: padding and out-of-vocabulary included. */
  int64_t size() const { return static_cast<int64_t>(ids_.size()) + 2; }

 private:
  std::unordered_map<std::string, int64_t> ids_;
};

}  // namespace strings
}  // namespace tapeflow
