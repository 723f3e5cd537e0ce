// defines: ConnectFn, WithConnectedRanks, ExpectAllOk
//
// The collectives tests' harness: N ranks as threads on 127.0.0.1, each
// joining a fresh coordinator and connecting its collectives, then a body,
// a closing barrier and Close (collectives_gloo_test, collectives_shm_test).
#pragma once

#include <array>
#include <functional>
#include <memory>

#include <gtest/gtest.h>

#include "common/status.h"
#include "tests/unit/rendezvous_test_util.h"
#include "trainer/collectives.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp::testing {

using ConnectFn = std::function<Result<std::unique_ptr<Collectives>>(int rank, Rendezvous& rendezvous)>;

/// Joins, connects with connect(rank, rendezvous), runs body(rank, collectives)
/// on every rank; returns each rank's outcome (the first error it met).
template <int N>
std::array<Status, N> WithConnectedRanks(const ConnectFn& connect,
                                         const std::function<Status(int, Collectives&)>& body,
                                         int timeout_seconds = 10) {
  const int port = FreePort();
  std::array<Status, N> results;
  RunRanks(N, [&](int rank) {
    auto joined = Rendezvous::Join(RendezvousTestOptions(port, rank, N, timeout_seconds));
    if (!joined.ok()) return void(results[rank] = joined.status());
    auto collectives = connect(rank, **joined);
    if (!collectives.ok()) return void(results[rank] = collectives.status());
    results[rank] = body(rank, **collectives);
    // Nobody tears down its connections (or unmaps a segment) while a peer still uses them.
    Status barrier = (*joined)->Barrier("test-end");
    if (results[rank].ok()) results[rank] = barrier;
    collectives.value().reset();
    Status closed = (*joined)->Close();
    if (results[rank].ok()) results[rank] = closed;
  });
  return results;
}

template <size_t N>
void ExpectAllOk(const std::array<Status, N>& results) {
  for (size_t rank = 0; rank < N; ++rank) EXPECT_TRUE(results[rank].ok()) << rank << ": " << results[rank].ToString();
}

}  // namespace dmlp::testing
