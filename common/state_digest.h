// defines: StateDigests, DigestStateImage, DigestStateStep
//
// The three digests of a canonical state image (see state_layout.h):
//   state  = params_sha256          = SHA-256(params ‖ count ‖ mu ‖ nu)
//   params = final_params_sha256    = SHA-256(params)
//   opt    = final_opt_state_sha256 = SHA-256(count ‖ mu ‖ nu)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/state_layout.h"

namespace dmlp {

struct StateDigests {
  std::string state;
  std::string params;
  std::string opt;
};

/// The per-step receipt digest: SHA-256 of the whole image. REQUIRES: size == layout.image_bytes().
std::string DigestStateStep(const uint8_t* image, size_t size);
/// All three digests, hashing each byte at most twice.
StateDigests DigestStateImage(const StateLayout& layout, const uint8_t* image);

}  // namespace dmlp
