// defines: DescribeDivergence, DivergenceCheck, PreferDivergence
//
// DIVERGENCE_CHECK=on (the default): every step, each rank's state digest is
// compared with every other rank's while the job runs, so a rank whose state
// silently went its own way (a bit flipped in GPU memory, a bad host) stops
// the job at that step instead of being found after hours by dmlp-verify.
//
// Where: on the digest pipeline's sink thread (trainer.cc RecordStep: receipt,
// then this check, then the checkpoint), through a rendezvous AllGather (32
// bytes per rank per step, as hex) on the sink's own lane (Rendezvous::OpenLane),
// so the step loop's own rendezvous calls (the shard audit) never queue behind
// a gather that waits for a slower rank. The step loop never waits on it except
// through the pipeline's back-pressure, so the check lags the loop by at most
// the pipeline's depth (DIGEST_THREADS + 1 steps), and it never changes a byte
// of a receipt or of the state. Because the checkpoint comes after it, rank 0
// writes a checkpoint only once the ranks agreed on that step.
//
// On a mismatch at step S every rank fails with the same
//   RANK_DIVERGED: step=S rank(s)=R[,R...] digest=<odd ranks' digests> majority=<hex|none>
//                  device(s)=rank R: <label>[; rank R: <label>...]
// (one line; dmlp-train exits 4): the odd ranks are those outside the value a
// strict majority of ranks hold; without one (two ranks, a tie) every rank is
// named and majority=none. The labels are gathered once at start (rank_devices.h), so any rank
// names the odd rank's host and device, not only its number.
//
// With one process, or DIVERGENCE_CHECK=off, it is a no-op.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "trainer/backend.h"
#include "trainer/checks/rank_devices.h"
#include "trainer/output/digest_pipeline.h"
#include "trainer/plan.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {

/// The RANK_DIVERGED detail for `digests` (by rank) at `step`, naming each odd
/// rank's `labels` entry; nullopt when every rank holds the same digest.
/// REQUIRES: labels.size() == digests.size().
std::optional<std::string> DescribeDivergence(int64_t step, const std::vector<std::string>& digests,
                                              const std::vector<std::string>& labels);

class DivergenceCheck {
 public:
  /// Off: a check that passes every step.
  DivergenceCheck() = default;
  /// `devices`: every rank's (GatherRankDevices), named in RANK_DIVERGED.
  /// A no-op with one process or DIVERGENCE_CHECK=off.
  static DivergenceCheck Start(const Plan& plan, const std::vector<RankDevice>& devices,
                               Rendezvous& rendezvous);
  /// Compares `digest` (this rank's, of `step`) with every rank's (collective,
  /// in step order). RANK_DIVERGED when they differ; PEER_LOST etc. from the rendezvous.
  Status Check(int64_t step, const std::string& digest);
  bool active() const { return rendezvous_ != nullptr; }
  const std::vector<std::string>& labels() const { return labels_; }

 private:
  Rendezvous* rendezvous_ = nullptr;  // null: off
  std::vector<std::string> labels_;   // by rank
};

/// The failure a rank reports when training stopped with `status`: when this
/// rank's pipeline found a divergence, RANK_DIVERGED rather than the broken
/// collective it caused (a peer that stopped for it first).
Status PreferDivergence(Status status, DigestPipeline& digests);

}  // namespace dmlp
