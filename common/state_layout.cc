#include "common/state_layout.h"

#include <algorithm>

#include "common/format/error_codes.h"

namespace dmlp {
namespace {

// Largest parameter count we accept: the image (12P + 4 bytes) must stay far
// below SIZE_MAX and every leaf must be indexable with 64-bit arithmetic.
constexpr int64_t kMaxParameters = int64_t{1} << 36;

}  // namespace

uint64_t StateLayout::CountParameters(const ModelShape& m) {
  auto add = [](uint64_t a, uint64_t b) {
    uint64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
  };
  auto mul = [](uint64_t a, uint64_t b) {
    uint64_t product = 0;
    return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
  };
  auto u = [](int64_t value) { return value < 0 ? uint64_t{0} : static_cast<uint64_t>(value); };
  // Dense_0: features -> width; (layers - 1) x width -> width; width -> classes.
  if (m.layers <= 0) return add(mul(u(m.features), u(m.classes)), u(m.classes));
  uint64_t count = add(mul(u(m.features), u(m.width)), u(m.width));
  count = add(count, mul(u(m.layers) - 1, add(mul(u(m.width), u(m.width)), u(m.width))));
  return add(count, add(mul(u(m.width), u(m.classes)), u(m.classes)));
}

Status StateLayout::CheckShape(const ModelShape& shape) {
  if (shape.features < 1 || shape.width < 1 || shape.classes < 1)
    return Status::Error(kModelInvalid, "features, width and classes must be >= 1");
  if (shape.layers < 0) return Status::Error(kModelInvalid, "layers must be >= 0");
  if (CountParameters(shape) > static_cast<uint64_t>(kMaxParameters))
    return Status::Error(kModelInvalid, "model too large");
  return Status::Ok();
}

Result<StateLayout> StateLayout::Create(const ModelShape& shape) {
  // First in constant time: a layout of 2e9 layers would take gigabytes to refuse.
  DMLP_RETURN_IF_ERROR(CheckShape(shape));
  StateLayout layout;
  layout.shape_ = shape;
  int64_t total = 0;
  for (int64_t layer = 0; layer <= shape.layers; ++layer) {
    int64_t in = layer == 0 ? shape.features : shape.width;
    int64_t out = layer == shape.layers ? shape.classes : shape.width;
    if (in > kMaxParameters / out) return Status::Error(kModelInvalid, "model too large");
    total += out + in * out;
    if (total > kMaxParameters) return Status::Error(kModelInvalid, "model too large");
    std::string prefix = "Dense_" + std::to_string(layer);
    layout.leaves_.push_back({prefix + "/bias", layer, false, {out}, 0, size_t(out)});
    layout.leaves_.push_back({prefix + "/kernel", layer, true, {in, out}, 0, size_t(in * out)});
  }
  // flax orders the tree by key string: "Dense_10" < "Dense_2"; "bias" < "kernel".
  std::stable_sort(layout.leaves_.begin(), layout.leaves_.end(),
                   [](const StateLeaf& a, const StateLeaf& b) { return a.name < b.name; });
  layout.bias_index_.resize(shape.layers + 1);
  layout.kernel_index_.resize(shape.layers + 1);
  size_t offset = 0;
  for (size_t i = 0; i < layout.leaves_.size(); ++i) {
    StateLeaf& leaf = layout.leaves_[i];
    leaf.offset = offset;
    offset += leaf.size;
    (leaf.is_kernel ? layout.kernel_index_ : layout.bias_index_)[leaf.layer] = i;
  }
  layout.parameter_count_ = offset;
  return layout;
}

int64_t StateLayout::fan_in(int64_t layer) const {
  return layer == 0 ? shape_.features : shape_.width;
}

int64_t StateLayout::fan_out(int64_t layer) const {
  return layer == shape_.layers ? shape_.classes : shape_.width;
}

}  // namespace dmlp
