// defines: ExpandSlurmHostlist, FirstSlurmHost
//
// Slurm's compact host list syntax (SLURM_JOB_NODELIST, SLURM_STEP_NODELIST),
// e.g. "gpu[01-04,07],login1": comma-separated host expressions, each a name
// with zero or more bracketed sets of numbers or ranges. Several brackets in
// one expression multiply ("r[1-2]n[1-2]" is r1n1 r1n2 r2n1 r2n2, in that
// order, as Slurm expands it); a range keeps the zero padding of its lower
// bound ("[08-10]" is 08 09 10). Errors are a sentence without the variable's
// name ("has an unclosed '['"), for the caller to prefix.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dmlp {

/// Most hosts one list may expand to; a larger one is an error, not an allocation.
inline constexpr size_t kMaxSlurmHosts = 1 << 20;

/// Every host of `text`, in Slurm's order; ENV_INVALID for malformed or empty lists.
Result<std::vector<std::string>> ExpandSlurmHostlist(std::string_view text);
/// The first host of `text` (where a job's rank 0 runs under the block distribution).
Result<std::string> FirstSlurmHost(std::string_view text);

}  // namespace dmlp
