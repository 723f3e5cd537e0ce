// transport_bench: the ordered reduction's exchange (an all-to-all of the
// partial gradients, then an all-gather of the folded slices, the bytes
// CpuBackend::Reduce moves every update) between rank processes on this host,
// through Gloo's TCP pairs and through shared memory (DMLP_CPU_TRANSPORT),
// against the floor of the shared path: the bytes it copies per rank at the
// memcpy rate measured with every rank copying at once; and what the
// checksums of the in place path cost (collectives_shm.h: every slice a rank
// publishes is checksummed by it and again by each reader, after reading),
// with the optimizer that reads the reduced vector: as separate passes (each
// against its floor, the bytes it reads at the rate every rank reads memory
// at once) and taken inside the fold and Adam (checksummed_passes.h), rounds
// of the three variants interleaved in one segment.
//
//   transport_bench [--ranks 2] [--floats N] [--rounds 40]
//
// --floats defaults to train_bench.py's gradient (FEATURES=512 WIDTH=1024 LAYERS=3
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
#include "trainer/cpu/adam_cpu.h"
#include "trainer/cpu/checksummed_passes.h"
#include "trainer/cpu/collectives_shm.h"
#include "trainer/cpu/slice_checksum.h"
#include "trainer/math/ordered_reduce.h"
#include "trainer/rendezvous/rendezvous.h"

namespace {

using Clock = std::chrono::steady_clock;
using dmlp::bench::Median;

constexpr size_t kGrain = 4096;  // CpuBackend's pieces (one thread per rank here: one piece)

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Timings {
  std::vector<double> exchange;   // seconds per all-to-all + all-gather (with the optimizer: MeasureChecks)
  std::vector<double> checksums;  // of which in separate checksum passes (MeasureChecks)
  std::vector<double> fold;       // of which in the fold (MeasureChecks)
  std::vector<double> optimizer;  // of which in Adam (MeasureChecks)
};

dmlp::Status Fail(const std::string& what) { return dmlp::Status::Error("BENCH", what); }

enum class Path { kTcp, kSharedCopies, kSharedInPlace };

// The in place reduction and the optimizer as CpuBackend::ReduceShared and
// ReduceAndApply run them: without checksums, with them as separate passes
// (until the checks moved into the fold and Adam), and as dmlp-train now.
enum class Checks { kNone, kSeparatePasses, kInsideThePasses };
constexpr Checks kAllChecks[] = {Checks::kNone, Checks::kSeparatePasses, Checks::kInsideThePasses};

// Floats each rank checksums per reduction with separate passes: it seals its
// partial's `ranks` slices, checks its slice of every partial, seals its
// slice of the reduced vector, checks all of it. Inside the passes only the
// first remains a pass of its own: `ranks` slices.
size_t ChecksummedFloats(size_t slice, int ranks) { return (3 * static_cast<size_t>(ranks) + 1) * slice; }

// One path on its own rendezvous: `rounds` reductions of `slice` floats per
// rank and peer, each as CpuBackend::Reduce runs it: an all-to-all, this
// rank's fold, an all-gather; or, in the segment's reduction area, a
// barrier, the fold and a barrier (ReduceShared).
dmlp::Result<Timings> Measure(int port, int rank, int ranks, Path path, size_t slice, int rounds) {
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<dmlp::Rendezvous> rendezvous,
                        dmlp::Rendezvous::Join(dmlp::testing::RendezvousTestOptions(port, rank, ranks, 60)));
  const size_t total = slice * static_cast<size_t>(ranks);
  dmlp::SharedSizes sizes{total * sizeof(float)};
  if (path == Path::kSharedInPlace) sizes = {0, total, total};
  const bool in_place = path == Path::kSharedInPlace;
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<dmlp::Collectives> collectives,
                        dmlp::ConnectCpuCollectives(*rendezvous, path == Path::kTcp ? dmlp::CpuTransport::kTcp
                                                                                    : dmlp::CpuTransport::kSharedMemory,
                                                    sizes));
  auto* shared = dynamic_cast<dmlp::SharedMemoryCollectives*>(collectives.get());
  if ((shared != nullptr) != (path != Path::kTcp)) return Fail("the transport asked for did not run");
  std::vector<float> own_partial(total, 1.0f + static_cast<float>(rank)), received(total), own_reduced(total);
  float* partial = shared && in_place ? shared->Partials(rank) : own_partial.data();
  float* reduced = shared && in_place ? shared->Reduced() : own_reduced.data();
  std::fill(partial, partial + total, 1.0f + static_cast<float>(rank));
  const size_t own = static_cast<size_t>(rank) * slice;
  Timings timings;
  for (int round = -3; round < rounds; ++round) {  // three rounds to warm up
    DMLP_RETURN_IF_ERROR(collectives->Barrier());
    const Clock::time_point started = Clock::now();
    if (path == Path::kSharedInPlace) {
      DMLP_RETURN_IF_ERROR(collectives->Barrier());
      dmlp::FoldShardsInOrder(shared->Partials(0) + own, static_cast<size_t>(ranks), total, slice, reduced + own);
      DMLP_RETURN_IF_ERROR(collectives->Barrier());
    } else {
      DMLP_RETURN_IF_ERROR(collectives->AllToAll(partial, received.data(), slice));
      dmlp::FoldShardsInOrder(received.data(), static_cast<size_t>(ranks), slice, slice, reduced + own);
      DMLP_RETURN_IF_ERROR(collectives->AllGather(reduced + own, reduced, slice));
    }
    if (round >= 0) timings.exchange.push_back(Seconds(Clock::now() - started));
  }
  DMLP_RETURN_IF_ERROR(rendezvous->Barrier("bench-end"));
  collectives.reset();
  DMLP_RETURN_IF_ERROR(rendezvous->Close());
  return timings;
}

// The in place reduction of `floats` (the padded gradient: parameters and
// the loss) and Adam over the parameters, as CpuBackend runs them on one
// thread per rank, in the three ways of `Checks`, a round of each in turn.
dmlp::Result<std::vector<Timings>> MeasureChecks(int port, int rank, int ranks, size_t floats, size_t slice,
                                                 int rounds) {
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<dmlp::Rendezvous> rendezvous,
                        dmlp::Rendezvous::Join(dmlp::testing::RendezvousTestOptions(port, rank, ranks, 60)));
  const size_t total = slice * static_cast<size_t>(ranks), parameters = floats - 1;
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<dmlp::Collectives> collectives,
                        dmlp::ConnectCpuCollectives(*rendezvous, dmlp::CpuTransport::kSharedMemory,
                                                    {0, total, total, slice}));
  auto* shared = dynamic_cast<dmlp::SharedMemoryCollectives*>(collectives.get());
  if (shared == nullptr) return Fail("the transport asked for did not run");
  float* partial = shared->Partials(rank);
  float* reduced = shared->Reduced();
  for (size_t i = 0; i < total; ++i) partial[i] = 1e-3f * static_cast<float>((i + static_cast<size_t>(rank)) % 97);
  std::vector<float> params(parameters, 0.5f), mu(parameters, 0.0f), nu(parameters, 0.0f);
  const dmlp::AdamScalars scalars = dmlp::MakeAdamScalars(1, 1e-3);
  const size_t own = static_cast<size_t>(rank) * slice;
  std::vector<Timings> timings(std::size(kAllChecks));
  for (int round = -3; round < rounds; ++round) {  // three rounds of each to warm up
    for (size_t variant = 0; variant < std::size(kAllChecks); ++variant) {
      const Checks checks = kAllChecks[variant];
      DMLP_RETURN_IF_ERROR(collectives->Barrier());
      Clock::duration in_checksums{}, in_fold{}, in_optimizer{};
      const auto timed = [](Clock::duration& total_time, auto&& step) {
        const Clock::time_point at = Clock::now();
        dmlp::Status status = step();
        total_time += Clock::now() - at;
        return status;
      };
      const auto seal = [&](const float* first, int count) {
        for (int i = 0; i < count; ++i) shared->SealSlice(first + i * slice, dmlp::SliceChecksum(first + i * slice, slice));
        return dmlp::Status::Ok();
      };
      const auto check = [&](const float* first, size_t stride) {
        for (int i = 0; i < ranks; ++i) {
          const float* read = first + i * stride;
          DMLP_RETURN_IF_ERROR(shared->CheckSlice(read, dmlp::SliceChecksum(read, slice)));
        }
        return dmlp::Status::Ok();
      };
      const Clock::time_point started = Clock::now();
      if (checks != Checks::kNone) DMLP_RETURN_IF_ERROR(timed(in_checksums, [&] { return seal(partial, ranks); }));
      DMLP_RETURN_IF_ERROR(collectives->Barrier());
      DMLP_RETURN_IF_ERROR(timed(in_fold, [&] {
        if (checks != Checks::kInsideThePasses) {
          dmlp::FoldShardsInOrder(shared->Partials(0) + own, static_cast<size_t>(ranks), total, slice, reduced + own);
          return dmlp::Status::Ok();
        }
        const std::vector<uint64_t> read = dmlp::FoldSliceChecksummed(
            shared->Partials(0) + own, static_cast<size_t>(ranks), total, slice, kGrain, reduced + own);
        for (int shard = 0; shard < ranks; ++shard)
          DMLP_RETURN_IF_ERROR(shared->CheckSlice(shared->Partials(0) + shard * total + own, read[shard]));
        shared->SealSlice(reduced + own, read[ranks]);
        return dmlp::Status::Ok();
      }));
      if (checks == Checks::kSeparatePasses) {
        DMLP_RETURN_IF_ERROR(timed(in_checksums, [&] { return check(shared->Partials(0) + own, total); }));
        DMLP_RETURN_IF_ERROR(timed(in_checksums, [&] { return seal(reduced + own, 1); }));
      }
      DMLP_RETURN_IF_ERROR(collectives->Barrier());
      DMLP_RETURN_IF_ERROR(timed(in_optimizer, [&] {
        if (checks != Checks::kInsideThePasses) {
          dmlp::AdamUpdate(scalars, reduced, params.data(), mu.data(), nu.data(), parameters);
          return dmlp::Status::Ok();
        }
        float loss = 0;
        for (size_t start = 0; start < total; start += slice) {
          const uint64_t read = dmlp::AdamUpdateSliceChecksummed(scalars, reduced, start, slice, parameters, kGrain,
                                                                 params.data(), mu.data(), nu.data(), &loss);
          DMLP_RETURN_IF_ERROR(shared->CheckSlice(reduced + start, read));
        }
        return dmlp::Status::Ok();
      }));
      if (checks == Checks::kSeparatePasses)
        DMLP_RETURN_IF_ERROR(timed(in_checksums, [&] { return check(reduced, slice); }));
      if (round < 0) continue;
      timings[variant].exchange.push_back(Seconds(Clock::now() - started));
      timings[variant].checksums.push_back(Seconds(in_checksums));
      timings[variant].fold.push_back(Seconds(in_fold));
      timings[variant].optimizer.push_back(Seconds(in_optimizer));
    }
  }
  DMLP_RETURN_IF_ERROR(rendezvous->Barrier("bench-end"));
  collectives.reset();
  DMLP_RETURN_IF_ERROR(rendezvous->Close());
  return timings;
}

// This rank's fold alone, from its own memory, every rank at once: what the
// in-place reduction cannot go below.
dmlp::Result<Timings> FoldAlone(int port, int rank, int ranks, size_t slice, int rounds) {
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<dmlp::Rendezvous> rendezvous,
                        dmlp::Rendezvous::Join(dmlp::testing::RendezvousTestOptions(port, rank, ranks, 60)));
  const size_t total = slice * static_cast<size_t>(ranks);
  std::vector<float> partials(total * static_cast<size_t>(ranks), 1.0f), reduced(total);
  Timings timings;
  for (int round = -3; round < rounds; ++round) {
    DMLP_RETURN_IF_ERROR(rendezvous->Barrier("fold"));
    const Clock::time_point started = Clock::now();
    dmlp::FoldShardsInOrder(partials.data() + rank * slice, static_cast<size_t>(ranks), total, slice,
                            reduced.data() + rank * slice);
    if (round >= 0) timings.exchange.push_back(Seconds(Clock::now() - started));
  }
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

// The rate (bytes/s) at which each rank reads `bytes` of its own memory with
// every rank reading at once: the floor of a checksum, which only reads.
dmlp::Result<double> ReadRate(int port, int rank, int ranks, size_t bytes, int rounds) {
  DMLP_ASSIGN_OR_RETURN(std::unique_ptr<dmlp::Rendezvous> rendezvous,
                        dmlp::Rendezvous::Join(dmlp::testing::RendezvousTestOptions(port, rank, ranks, 60)));
  std::vector<uint64_t> words(bytes / sizeof(uint64_t), 1);
  std::vector<double> seconds;
  uint64_t sum = 0;
  for (int round = -3; round < rounds; ++round) {
    DMLP_RETURN_IF_ERROR(rendezvous->Barrier("read"));
    const Clock::time_point started = Clock::now();
    for (uint64_t word : words) sum += word;
    if (round >= 0) seconds.push_back(Seconds(Clock::now() - started));
    words[static_cast<size_t>(round + 3) % words.size()] = sum;  // the sum is used
  }
  DMLP_RETURN_IF_ERROR(rendezvous->Close());
  return static_cast<double>(words.size() * sizeof(uint64_t)) / Median(seconds);
}

std::string Range(const std::vector<double>& seconds) {
  const auto [low, high] = std::minmax_element(seconds.begin(), seconds.end());
  char text[96];
  std::snprintf(text, sizeof text, "%.2f ms (range %.2f-%.2f)", Median(seconds) * 1e3, *low * 1e3, *high * 1e3);
  return text;
}

// Range in microseconds, for the checksums of small gradients.
std::string RangeMicroseconds(const std::vector<double>& seconds) {
  const auto [low, high] = std::minmax_element(seconds.begin(), seconds.end());
  char text[96];
  std::snprintf(text, sizeof text, "%.1f us (range %.1f-%.1f)", Median(seconds) * 1e6, *low * 1e6, *high * 1e6);
  return text;
}

int RunRank(const std::vector<int>& ports, int rank, int ranks, size_t floats, int rounds) {
  const size_t slice = (floats + static_cast<size_t>(ranks) - 1) / static_cast<size_t>(ranks);
  std::vector<Timings> paths;
  dmlp::Status failed = dmlp::Status::Ok();
  for (Path path : {Path::kTcp, Path::kSharedCopies, Path::kSharedInPlace}) {
    auto timings = Measure(ports[paths.size()], rank, ranks, path, slice, rounds);
    if (!timings.ok()) {
      failed = timings.status();
      break;
    }
    paths.push_back(*timings);
  }
  auto with_checks = failed.ok() ? MeasureChecks(ports[3], rank, ranks, floats, slice, rounds)
                                 : dmlp::Result<std::vector<Timings>>(failed);
  if (!with_checks.ok()) failed = with_checks.status();
  auto fold = failed.ok() ? FoldAlone(ports[4], rank, ranks, slice, rounds) : dmlp::Result<Timings>(failed);
  // The copying shared path copies, per rank and reduction: its blocks for
  // the peers into its outbox, its own block across, the peers' blocks for it
  // out; then its slice into its outbox and the peers' slices out.
  const size_t peers = static_cast<size_t>(ranks) - 1;
  const size_t copy_bytes = (3 * peers + 2) * slice * sizeof(float);
  auto rate = fold.ok() ? CopyRate(ports[5], rank, ranks, copy_bytes, rounds) : dmlp::Result<double>(fold.status());
  const size_t checksummed_bytes = ChecksummedFloats(slice, ranks) * sizeof(float);
  auto read_rate =
      rate.ok() ? ReadRate(ports[6], rank, ranks, checksummed_bytes, rounds) : dmlp::Result<double>(rate.status());
  if (!read_rate.ok()) {
    std::fprintf(stderr, "transport_bench: rank %d: %s\n", rank, read_rate.status().ToString().c_str());
    return 1;
  }
  if (rank != 0) return 0;
  const double tcp = Median(paths[0].exchange), copies = Median(paths[1].exchange);
  const double in_place = Median(paths[2].exchange), folding = Median(fold->exchange);
  const double copy_floor = static_cast<double>(copy_bytes) / *rate;
  std::printf("transport_bench: %d ranks, %zu floats per rank (%.1f MB): the ordered reduction, %d rounds\n",
              ranks, slice * static_cast<size_t>(ranks), static_cast<double>(slice * ranks * sizeof(float)) / 1e6,
              rounds);
  std::printf("  fold alone            %s   (this rank's slice of every partial, local memory)\n",
              Range(fold->exchange).c_str());
  std::printf("  tcp (gloo)            %s   all-to-all, fold, all-gather\n", Range(paths[0].exchange).c_str());
  std::printf("  shared, copying       %s   the same through outboxes: %.2fx faster than tcp; its copies' "
              "floor %.2f ms (%.1f MB at memcpy's %.1f GB/s, every rank at once) + the fold\n",
              Range(paths[1].exchange).c_str(), tcp / copies, copy_floor * 1e3,
              static_cast<double>(copy_bytes) / 1e6, *rate / 1e9);
  std::printf("  shared, in place      %s   barrier, fold, barrier (dmlp-train's): %.2fx faster than tcp, "
              "%.2fx the fold alone\n",
              Range(paths[2].exchange).c_str(), tcp / in_place, in_place / folding);
  // What the checks add, each part against the unchecked variant's in the same rounds.
  const std::vector<Timings>& checked = *with_checks;
  std::printf("  in place + Adam, rounds of three variants interleaved (Adam over %zu parameters, 1 thread per rank):\n",
              floats - 1);
  const char* names[] = {"unchecked             ", "checks, separate passes", "checks, inside the passes"};
  for (size_t variant = 0; variant < checked.size(); ++variant) {
    const Timings& t = checked[variant];
    const double added = Median(t.checksums) + (Median(t.fold) - Median(checked[0].fold)) +
                         (Median(t.optimizer) - Median(checked[0].optimizer));
    std::printf("    %s %s: fold %s, Adam %s, separate checksum passes %s; the checks add %.1f us\n", names[variant],
                Range(t.exchange).c_str(), RangeMicroseconds(t.fold).c_str(), RangeMicroseconds(t.optimizer).c_str(),
                RangeMicroseconds(t.checksums).c_str(), added * 1e6);
  }
  const double read_floor = static_cast<double>(checksummed_bytes) / *read_rate;
  std::printf("  floor of the separate passes %.1f us (%.3f MB read at %.1f GB/s, every rank at once); of the one "
              "left inside the passes (the partial's seal) %.1f us\n",
              read_floor * 1e6, static_cast<double>(checksummed_bytes) / 1e6, *read_rate / 1e9,
              read_floor * static_cast<double>(ranks) / static_cast<double>(3 * ranks + 1) * 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"transport_bench: the ordered reduction's exchange, Gloo TCP against shared memory"};
  int ranks = 2, rounds = 40;
  size_t floats = 2633738 + 1;  // train_bench.py's parameters and the loss
  app.add_option("--ranks", ranks, "rank processes")->check(CLI::Range(2, 64));
  app.add_option("--floats", floats, "floats per rank (the padded gradient)")->check(CLI::Range(1, 1 << 28));
  app.add_option("--rounds", rounds, "timed exchanges per transport")->check(CLI::Range(1, 100000));
  CLI11_PARSE(app, argc, argv);
  std::vector<int> ports;
  for (int i = 0; i < 7; ++i) ports.push_back(dmlp::testing::FreePort());
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
