// transport_bench: the ordered reduction's exchange (an all-to-all of the
// partial gradients, then an all-gather of the folded slices, the bytes
// CpuBackend::Reduce moves every update) between rank processes on this host,
// through Gloo's TCP pairs and through shared memory (DMLP_CPU_TRANSPORT),
// against the floor of the shared path: the bytes it copies per rank at the
// memcpy rate measured with every rank copying at once.
//
//   transport_bench [--ranks 2] [--floats N] [--rounds 40]
//
// --floats defaults to issue 4's gradient (FEATURES=512 WIDTH=1024 LAYERS=3
// CLASSES=10: 2,633,738 parameters and the loss, padded to the ranks). Each
// transport gets its own rendezvous; rounds alternate nothing else, so run it
// on an otherwise idle machine. Rank 0 prints the figures.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/median.h"
#include "tests/unit/rendezvous_test_util.h"
#include "trainer/cpu/collectives_shm.h"
#include "trainer/rendezvous/rendezvous.h"

namespace {

using Clock = std::chrono::steady_clock;
using dmlp::bench::Median;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Timings {
  std::vector<double> exchange;  // seconds per all-to-all + all-gather
};

dmlp::Status Fail(const std::string& what) { return dmlp::Status::Error("BENCH", what); }

// One transport on its own rendezvous: `rounds` exchanges of `slice` floats per peer.
dmlp::Result<Timings> Measure(int port, int rank, int ranks, dmlp::CpuTransport transport, size_t slice,
                              int rounds) {
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<dmlp::Rendezvous> rendezvous,
                        dmlp::Rendezvous::Join(dmlp::testing::RendezvousTestOptions(port, rank, ranks, 60)));
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<dmlp::Collectives> collectives,
                        dmlp::ConnectCpuCollectives(*rendezvous, transport, slice * ranks * sizeof(float)));
  const bool shared = dynamic_cast<dmlp::SharedMemoryCollectives*>(collectives.get()) != nullptr;
  if (shared != (transport == dmlp::CpuTransport::kSharedMemory)) return Fail("the transport asked for did not run");
  const size_t total = slice * static_cast<size_t>(ranks);
  std::vector<float> partial(total, 1.0f + static_cast<float>(rank)), received(total), reduced(total);
  Timings timings;
  for (int round = -3; round < rounds; ++round) {  // three rounds to warm up (and grow the segment)
    DMLP_RETURN_IF_ERROR(collectives->Barrier());
    const Clock::time_point started = Clock::now();
    DMLP_RETURN_IF_ERROR(collectives->AllToAll(partial.data(), received.data(), slice));
    float* own = reduced.data() + static_cast<size_t>(rank) * slice;  // in place, as Reduce does
    DMLP_RETURN_IF_ERROR(collectives->AllGather(own, reduced.data(), slice));
    if (round >= 0) timings.exchange.push_back(Seconds(Clock::now() - started));
  }
  DMLP_RETURN_IF_ERROR(rendezvous->Barrier("bench-end"));
  collectives.reset();
  DMLP_RETURN_IF_ERROR(rendezvous->Close());
  return timings;
}

// memcpy's rate (bytes/s) with every rank copying `bytes` at once.
dmlp::Result<double> CopyRate(int port, int rank, int ranks, size_t bytes, int rounds) {
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<dmlp::Rendezvous> rendezvous,
                        dmlp::Rendezvous::Join(dmlp::testing::RendezvousTestOptions(port, rank, ranks, 60)));
  std::vector<char> from(bytes, 1), to(bytes);
  std::vector<double> seconds;
  for (int round = -3; round < rounds; ++round) {
    DMLP_RETURN_IF_ERROR(rendezvous->Barrier("copy"));
    const Clock::time_point started = Clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    if (round >= 0) seconds.push_back(Seconds(Clock::now() - started));
    from[static_cast<size_t>(round + 3) % bytes] = to[0];  // the copy is used
  }
  DMLP_RETURN_IF_ERROR(rendezvous->Close());
  return static_cast<double>(bytes) / Median(seconds);
}

std::string Range(const std::vector<double>& seconds) {
  const auto [low, high] = std::minmax_element(seconds.begin(), seconds.end());
  char text[96];
  std::snprintf(text, sizeof text, "%.2f ms (range %.2f-%.2f)", Median(seconds) * 1e3, *low * 1e3, *high * 1e3);
  return text;
}

int RunRank(const std::vector<int>& ports, int rank, int ranks, size_t floats, int rounds) {
  const size_t slice = (floats + static_cast<size_t>(ranks) - 1) / static_cast<size_t>(ranks);
  auto tcp = Measure(ports[0], rank, ranks, dmlp::CpuTransport::kTcp, slice, rounds);
  auto shm = tcp.ok() ? Measure(ports[1], rank, ranks, dmlp::CpuTransport::kSharedMemory, slice, rounds)
                      : dmlp::Result<Timings>(tcp.status());
  // The shared path copies, per rank and exchange: its blocks for the peers
  // into its outbox, its own block across, the peers' blocks for it out; then
  // its slice into its outbox and the peers' slices out.
  const size_t peers = static_cast<size_t>(ranks) - 1;
  const size_t copy_bytes = (3 * peers + 2) * slice * sizeof(float);
  auto rate = shm.ok() ? CopyRate(ports[2], rank, ranks, copy_bytes, rounds) : dmlp::Result<double>(shm.status());
  if (!rate.ok()) {
    std::fprintf(stderr, "transport_bench: rank %d: %s\n", rank, rate.status().ToString().c_str());
    return 1;
  }
  if (rank != 0) return 0;
  const double tcp_ms = Median(tcp->exchange) * 1e3, shm_ms = Median(shm->exchange) * 1e3;
  const double floor_ms = static_cast<double>(copy_bytes) / *rate * 1e3;
  std::printf("transport_bench: %d ranks, %zu floats per rank (%.1f MB): one all-to-all + all-gather, %d rounds\n",
              ranks, slice * static_cast<size_t>(ranks), static_cast<double>(slice * ranks * sizeof(float)) / 1e6,
              rounds);
  std::printf("  tcp (gloo)      %s\n", Range(tcp->exchange).c_str());
  std::printf("  shared memory   %s   tcp / shared = %.2fx\n", Range(shm->exchange).c_str(), tcp_ms / shm_ms);
  std::printf("  copy floor      %.2f ms: the %.1f MB the shared path copies per rank at %.1f GB/s "
              "(memcpy, every rank at once); shared memory is %.2fx it\n",
              floor_ms, static_cast<double>(copy_bytes) / 1e6, *rate / 1e9, shm_ms / floor_ms);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"transport_bench: the ordered reduction's exchange, Gloo TCP against shared memory"};
  int ranks = 2, rounds = 40;
  size_t floats = 2633738 + 1;  // issue 4's parameters and the loss
  app.add_option("--ranks", ranks, "rank processes")->check(CLI::Range(2, 64));
  app.add_option("--floats", floats, "floats per rank (the padded gradient)")->check(CLI::Range(1, 1 << 28));
  app.add_option("--rounds", rounds, "timed exchanges per transport")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  const std::vector<int> ports = {dmlp::testing::FreePort(), dmlp::testing::FreePort(), dmlp::testing::FreePort()};
  std::vector<pid_t> children;
  for (int rank = 0; rank < ranks; ++rank) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::perror("transport_bench: fork");
      return 1;
    }
    if (pid == 0) {
      const int code = RunRank(ports, rank, ranks, floats, rounds);
      std::fflush(stdout);  // _exit flushes nothing
      _exit(code);
    }
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {  // by pid: ours only
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  return failed;
}
