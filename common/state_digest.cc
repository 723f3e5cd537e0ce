#include "common/state_digest.h"

#include "common/sha256.h"

namespace dmlp {

std::string DigestStateStep(const uint8_t* image, size_t size) { return Sha256Hex(image, size); }

StateDigests DigestStateImage(const StateLayout& layout, const uint8_t* image) {
  const size_t params_bytes = layout.params_bytes();
  const size_t opt_bytes = layout.image_bytes() - params_bytes;
  Sha256 whole;
  whole.Update(image, params_bytes);
  Sha256 params_only = whole.Clone();
  whole.Update(image + params_bytes, opt_bytes);
  StateDigests digests;
  digests.state = whole.FinishHex();
  digests.params = params_only.FinishHex();
  digests.opt = Sha256Hex(image + params_bytes, opt_bytes);
  return digests;
}

}  // namespace dmlp
