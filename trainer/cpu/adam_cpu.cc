#include "trainer/cpu/adam_cpu.h"

#include "trainer/math/cpu_clones.h"

namespace dmlp {

// One loop, compiled per ISA (trainer/math/cpu_clones.h): every operation in
// AdamElement is a single IEEE-rounded add, multiply, divide, square root or
// FFma, so the vector width cannot change a bit, only the speed. FMA clones:
// with plain "avx2" GCC has no FMA instruction, and that clone called libm's
// fmaf three times per element, unvectorized.
DMLP_CPU_FMA_CLONES
void AdamUpdate(const AdamScalars& scalars, const float* grad, float* params, float* mu, float* nu,
                size_t count) {
  for (size_t i = 0; i < count; ++i) AdamElement(scalars, grad[i], &params[i], &mu[i], &nu[i]);
}

}  // namespace dmlp
