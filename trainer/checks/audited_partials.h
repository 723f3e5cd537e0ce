// defines: PartialCopy, AuditedPartials
//
// What the shard audit (shard_audit.h) needs of a platform: a padded shard
// partial (P gradient values, the loss sum, the zeros) copied to host memory,
// for a thread that hashes it while the updates go on. A Backend that offers
// it returns itself from Backend::audited_partials().
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "common/status.h"

namespace dmlp {

/// A shard partial on its way to host memory: `bytes` holds its `size` bytes
/// once `ready` returned OK. `ready` may run on another thread; the backend
/// outlives it.
struct PartialCopy {
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  std::function<Status()> ready;
};

/// Both calls copy into the one audit buffer. REQUIRES: between
/// Backend::ComputePartials and ReduceAndApply; the plan audits
/// (AUDIT_EVERY > 0, NUM_PROCESSES > 1); the previous PartialCopy was waited
/// for and its bytes read.
class AuditedPartials {
 public:
  virtual ~AuditedPartials() = default;
  /// Local shard `local_shard`'s partial of the update in progress.
  virtual Result<PartialCopy> CopyPartial(int64_t local_shard) = 0;
  /// Computes global shard `shard`'s partial of (step, microbatch) from the
  /// current parameters (the state before this update's Adam step), with the
  /// same code and shapes as its owner, and copies it.
  virtual Result<PartialCopy> CopyAuditShard(int64_t step, int64_t microbatch, int64_t shard) = 0;
};

}  // namespace dmlp
