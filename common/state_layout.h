// defines: ModelShape, StateLeaf, StateLayout
//
// Where every number of the training state lives. The state is kept, hashed,
// stored and sent as one canonical byte image (testdata/digest_vector.json):
//
//   [params: P float32][adam count: int32][mu: P float32][nu: P float32]
//
// and within each of params/mu/nu the leaves follow flax's pytree order: layer
// names "Dense_<k>" sorted AS STRINGS (Dense_10 sorts before Dense_2), bias
// before kernel, kernel [in][out] row-major. All values little-endian.
// So params_sha256 = SHA-256(image), final_params_sha256 = SHA-256(image[0, 4P)),
// final_opt_state_sha256 = SHA-256(image[4P, end)).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dmlp {

/// The MLP: `layers` hidden Dense(width)+ReLU, then Dense(classes).
struct ModelShape {
  int64_t features = 0;
  int64_t width = 0;
  int64_t layers = 0;  // hidden layers; there are layers + 1 Dense layers
  int64_t classes = 0;
};

/// One array of the parameter tree, e.g. "Dense_1/kernel".
struct StateLeaf {
  std::string name;            // "Dense_<layer>/bias" or "Dense_<layer>/kernel"
  int64_t layer = 0;           // Dense index in forward order
  bool is_kernel = false;
  std::vector<int64_t> shape;  // bias: {out}; kernel: {in, out}
  size_t offset = 0;           // in floats, from the start of the params block
  size_t size = 0;             // in floats
};

class StateLayout {
 public:
  /// Checks every dimension >= 1 and that the state fits in memory arithmetic.
  static Result<StateLayout> Create(const ModelShape& shape);
  /// P of `shape` from its numbers alone (no per-layer work: LAYERS may be
  /// 2e9), saturating at UINT64_MAX instead of wrapping.
  static uint64_t CountParameters(const ModelShape& shape);
  /// What Create checks, in constant time: dimensions >= 1, P within the limit.
  static Status CheckShape(const ModelShape& shape);

  const ModelShape& shape() const { return shape_; }
  /// Leaves in canonical order (the digest and file order).
  const std::vector<StateLeaf>& leaves() const { return leaves_; }
  /// Number of Dense layers (hidden layers + output layer).
  int64_t dense_count() const { return shape_.layers + 1; }
  int64_t fan_in(int64_t layer) const;
  int64_t fan_out(int64_t layer) const;
  const StateLeaf& bias(int64_t layer) const { return leaves_[bias_index_[layer]]; }
  const StateLeaf& kernel(int64_t layer) const { return leaves_[kernel_index_[layer]]; }

  /// P: float32 values in params (and in mu, and in nu).
  size_t parameter_count() const { return parameter_count_; }
  // Byte offsets inside the canonical state image.
  size_t params_bytes() const { return 4 * parameter_count_; }
  size_t count_offset() const { return params_bytes(); }
  size_t mu_offset() const { return count_offset() + 4; }
  size_t nu_offset() const { return mu_offset() + params_bytes(); }
  size_t image_bytes() const { return nu_offset() + params_bytes(); }

 private:
  ModelShape shape_;
  std::vector<StateLeaf> leaves_;
  std::vector<size_t> bias_index_, kernel_index_;
  size_t parameter_count_ = 0;
};

}  // namespace dmlp
