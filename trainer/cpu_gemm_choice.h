// defines: CpuGemm, kCpuGemmChoices, ParseCpuGemm, CpuGemmOrder
//
// DMLP_CPU_GEMM (PLATFORM=cpu) as the plan holds it: which GEMM the CPU
// platform runs (trainer/cpu/gemm_cpu.h says what each choice is). Here, apart
// from the GEMM, because the plan (trainer/plan.h) is platform-neutral and may
// include nothing from trainer/cpu/. The two functions need the CPU platform's
// knowledge (which kernels this CPU runs, BLIS's sub-configuration): they are
// defined in trainer/cpu/gemm_cpu.cc, which programs link with the platform.
#pragma once

#include <string>

#include "common/status.h"

namespace dmlp {

enum class CpuGemm { kAuto, kAvx512, kAvx2, kScalar, kBlis };

/// DMLP_CPU_GEMM's words, in the order of CpuGemm.
inline constexpr const char* kCpuGemmChoices[] = {"auto", "avx512", "avx2", "scalar", "blis"};

/// DMLP_CPU_GEMM's value: ENV_INVALID for an unknown word or a kernel this CPU cannot run.
Result<CpuGemm> ParseCpuGemm(const std::string& text);

/// The accumulation order a choice gives on this CPU, as the fingerprint records it:
/// "fma-chain-k-ascending" for dmlp's kernels, BLIS's sub-configuration ("skx",
/// "haswell", "generic") for blis.
std::string CpuGemmOrder(CpuGemm choice);

}  // namespace dmlp
