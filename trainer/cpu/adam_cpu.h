// defines: AdamUpdate
//
// The CPU platform's Adam: trainer/math/adam.h's AdamElement over a span of the
// state, on the host. The CUDA platform's counterpart is
// trainer/cuda/adam_update.h; both apply the same element formula, so they
// give the same bits from the same inputs.
#pragma once

#include <cstddef>

#include "trainer/math/adam.h"

namespace dmlp {

/// AdamElement over `count` elements (a whole state or one rank's slice of it).
void AdamUpdate(const AdamScalars& scalars, const float* grad, float* params, float* mu, float* nu,
                size_t count);

}  // namespace dmlp
