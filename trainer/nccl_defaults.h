// defines: UsesNccl, DefaultToFreezableTransports
//
// Freeze/restore (cuda-checkpoint + CRIU) breaks on CUDA IPC and host shared
// memory, which NCCL uses by default between ranks of one host (its P2P, SHM
// and NVLS transports), and on InfiniBand, whose queue pairs and registered
// memory live in the adapter where CRIU cannot dump them. Unless the user set
// these variables, NCCL is left only its socket transport
// (NCCL_SOCKET_IFNAME stays the user's choice).
// main() calls this before any thread starts: setenv beside a getenv on
// another thread (NCCL's bootstrap, Gloo, a digest hasher) is a data race in
// glibc. The values are visible to the fingerprint's NCCL_* list. No CUDA
// here: dmlp-train calls it in every build.
#pragma once

#include "trainer/plan.h"

namespace dmlp {

/// True when the plan's ranks form an NCCL communicator (PLATFORM=cuda,
/// COLLECTIVES=nccl, more than one rank). 1-rank and gloo jobs load no NCCL.
bool UsesNccl(const Plan& plan);

/// Sets NCCL_SHM_DISABLE=1, NCCL_P2P_DISABLE=1, NCCL_NVLS_ENABLE=0 and
/// NCCL_IB_DISABLE=1 where unset, when UsesNccl(plan). REQUIRES: no other
/// thread runs yet.
void DefaultToFreezableTransports(const Plan& plan);

}  // namespace dmlp
