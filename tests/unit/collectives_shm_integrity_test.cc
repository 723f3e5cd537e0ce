// What the shared memory transport checks of its bytes (collectives_shm.h,
// slice_checksum.h): a process of the same user that writes into the segment
// through /proc/<pid>/fd between a rank's publishing and a peer's reading
// makes the reader refuse, naming the slice and its writer. The outsider here
// does what such a process does: finds the memfd among the open files, maps
// it, looks for the bytes it wants to change and changes them.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/unit/collectives_test_util.h"
#include "trainer/cpu/collectives_shm.h"
#include "trainer/cpu/slice_checksum.h"

namespace dmlp {
namespace {

using testing::ExpectAllOk;

constexpr int kRanks = 3;
constexpr size_t kSlice = 1001;  // odd: slices start 4 bytes past a word boundary

// The segment as another process of the same user sees it: any of this
// process's memfds named like the transport's, mapped whole.
class Outsider {
 public:
  Outsider() {
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      std::error_code error;
      const std::string target = std::filesystem::read_symlink(entry.path(), error).string();
      if (error || target.find("memfd:dmlp-collectives") == std::string::npos) continue;
      fd_ = open(entry.path().c_str(), O_RDWR | O_CLOEXEC);
      break;
    }
    struct stat info {};
    if (fd_ < 0 || fstat(fd_, &info) != 0) return;
    size_ = static_cast<size_t>(info.st_size);
    void* at = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (at != MAP_FAILED) bytes_ = static_cast<unsigned char*>(at);
  }
  ~Outsider() {
    if (bytes_ != nullptr) munmap(bytes_, size_);
    if (fd_ >= 0) close(fd_);
  }

  /// Adds one to the float right after the first copy of `pattern` found; false when none is.
  bool BumpFloatAfter(const std::vector<float>& pattern) {
    if (bytes_ == nullptr) return false;
    const size_t length = pattern.size() * sizeof(float);
    for (size_t at = 0; at + length + sizeof(float) <= size_; at += sizeof(float)) {
      if (std::memcmp(bytes_ + at, pattern.data(), length) != 0) continue;
      float value;
      std::memcpy(&value, bytes_ + at + length, sizeof value);
      value += 1.0f;
      std::memcpy(bytes_ + at + length, &value, sizeof value);
      return true;
    }
    return false;
  }

 private:
  int fd_ = -1;
  unsigned char* bytes_ = nullptr;
  size_t size_ = 0;
};

float Value(int round, int rank, size_t i) {
  return static_cast<float>(round * 7919 + rank * 1000003 + static_cast<int>(i));
}

// The bytes before rank's float i of round `round`, long enough to be unique.
std::vector<float> Before(int round, int rank, size_t i) {
  std::vector<float> pattern;
  for (size_t j = i - 8; j < i; ++j) pattern.push_back(Value(round, rank, j));
  return pattern;
}

std::array<Status, kRanks> WithSegment(const std::function<Status(int, SharedMemoryCollectives&)>& body) {
  const SharedSizes sizes{4096, kRanks * kSlice, kRanks * kSlice, kSlice};
  return testing::WithConnectedRanks<kRanks>(
      [&](int, Rendezvous& rendezvous) {
        return ConnectCpuCollectives(rendezvous, CpuTransport::kSharedMemory, sizes, "h");
      },
      [&](int rank, Collectives& collectives) {
        return body(rank, dynamic_cast<SharedMemoryCollectives&>(collectives));
      });
}

std::string Prefix(const Status& status) { return status.ToString().substr(0, status.ToString().find(" (checksum")); }

// Three rounds of the ordered reduction's pattern (CpuBackend::ReduceShared):
// each rank writes its partials and seals their slices, a barrier, each reads
// its slice of every partial and checks it. In the last round an outsider
// changes one float of rank 1's partials, in rank 2's slice, after the
// barrier: rank 2 refuses; the others, whose slices are intact, do not.
TEST(SharedMemoryIntegrityTest, AWriteIntoAPublishedPartialMakesItsReaderRefuse) {
  constexpr int kTamperedRound = 2;
  const auto results = WithSegment([&](int rank, SharedMemoryCollectives& shared) {
    float* mine = shared.Partials(rank);
    for (int round = 0; round < 3; ++round) {
      for (size_t i = 0; i < kRanks * kSlice; ++i) mine[i] = Value(round, rank, i);
      for (int slice = 0; slice < kRanks; ++slice)
        shared.SealSlice(mine + slice * kSlice, SliceChecksum(mine + slice * kSlice, kSlice));
      DMLP_RETURN_IF_ERROR(shared.Barrier());
      if (round == kTamperedRound && rank == 0 && !Outsider().BumpFloatAfter(Before(round, 1, 2 * kSlice + 500)))
        return Status::Error("TEST", "the outsider found no partial to change");
      DMLP_RETURN_IF_ERROR(shared.Barrier());  // the outsider has written
      for (int writer = 0; writer < kRanks; ++writer) {
        const float* read = shared.Partials(writer) + rank * kSlice;
        DMLP_RETURN_IF_ERROR(shared.CheckSlice(read, SliceChecksum(read, kSlice)));
      }
      if (round < kTamperedRound) DMLP_RETURN_IF_ERROR(shared.Barrier());  // nobody writes round + 1 while a peer reads
    }
    return Status::Ok();
  });
  EXPECT_TRUE(results[0].ok()) << results[0].ToString();
  EXPECT_TRUE(results[1].ok()) << results[1].ToString();
  EXPECT_EQ(Prefix(results[2]),
            "COLLECTIVE_ERROR: reduce: the shared segment's rank 1's partials, slice 2 changed after its writer "
            "published it")
      << results[2].ToString();
  EXPECT_NE(results[2].detail().find(" read) (rank 2)"), std::string::npos) << results[2].ToString();
}

// The reduced vector: each rank seals its slice, every rank checks all of
// them; an outsider's change to rank 0's slice is refused by every reader.
TEST(SharedMemoryIntegrityTest, AWriteIntoThePublishedReducedVectorMakesEveryReaderRefuse) {
  const auto results = WithSegment([&](int rank, SharedMemoryCollectives& shared) {
    float* own = shared.Reduced() + rank * kSlice;
    for (size_t i = 0; i < kSlice; ++i) own[i] = Value(0, 9, rank * kSlice + i);
    shared.SealSlice(own, SliceChecksum(own, kSlice));
    DMLP_RETURN_IF_ERROR(shared.Barrier());
    if (rank == 1 && !Outsider().BumpFloatAfter(Before(0, 9, 20))) return Status::Error("TEST", "nothing found");
    DMLP_RETURN_IF_ERROR(shared.Barrier());
    for (int slice = 0; slice < kRanks; ++slice) {
      const float* read = shared.Reduced() + slice * kSlice;
      DMLP_RETURN_IF_ERROR(shared.CheckSlice(read, SliceChecksum(read, kSlice)));
    }
    return Status::Ok();
  });
  for (int rank = 0; rank < kRanks; ++rank)
    EXPECT_EQ(Prefix(results[rank]),
              "COLLECTIVE_ERROR: reduce: the shared segment's reduced vector, slice 0 changed after its writer "
              "published it")
        << results[rank].ToString();
}

// An all-gather's outbox: rank 2 comes late, so ranks 0 and 1 have published
// and wait; the outsider changes rank 1's outbox meanwhile. Every reader of
// rank 1's block refuses it; nobody receives the changed bytes.
TEST(SharedMemoryIntegrityTest, AWriteIntoAPublishedOutboxMakesItsReadersRefuse) {
  constexpr size_t kCount = 3000;
  std::atomic<bool> rank1_wrote{false};
  const auto results = WithSegment([&](int rank, SharedMemoryCollectives& shared) {
    std::vector<float> send(kCount), all(kCount * kRanks, -1.0f);
    for (size_t i = 0; i < kCount; ++i) send[i] = Value(5, rank, i);
    if (rank == 2) {
      // Rank 1 copies its block into its outbox before it waits for us.
      Outsider outsider;
      while (!outsider.BumpFloatAfter(Before(5, 1, 100))) std::this_thread::yield();
      rank1_wrote = true;
    }
    Status gathered = shared.AllGather(send.data(), all.data(), kCount);
    for (size_t i = 0; gathered.ok() && i < kCount; ++i)
      if (all[kCount + i] != Value(5, 1, i)) return Status::Error("TEST", "received a changed byte");
    return gathered;
  });
  EXPECT_TRUE(rank1_wrote);
  EXPECT_TRUE(results[1].ok()) << results[1].ToString();
  for (int rank : {0, 2})
    EXPECT_EQ(Prefix(results[rank]),
              "COLLECTIVE_ERROR: allgather: the shared segment's outbox of rank 1, block 0, changed after rank 1 "
              "published it")
        << results[rank].ToString();
}

// Without outsiders, many rounds of every collective and slice check pass:
// the checks never refuse the ranks' own bytes.
TEST(SharedMemoryIntegrityTest, UntouchedBytesAlwaysPass) {
  ExpectAllOk(WithSegment([&](int rank, SharedMemoryCollectives& shared) {
    for (int round = 0; round < 20; ++round) {
      const size_t count = 1 + static_cast<size_t>(round) * 977;
      std::vector<float> send(count * kRanks), recv(count * kRanks);
      for (size_t i = 0; i < send.size(); ++i) send[i] = Value(round, rank, i);
      DMLP_RETURN_IF_ERROR(shared.AllToAll(send.data(), recv.data(), count));
      DMLP_RETURN_IF_ERROR(shared.AllGather(send.data(), recv.data(), count));
      float* own = shared.Reduced() + rank * kSlice;
      for (size_t i = 0; i < kSlice; ++i) own[i] = Value(round, rank, i);
      shared.SealSlice(own, SliceChecksum(own, kSlice));
      DMLP_RETURN_IF_ERROR(shared.Barrier());
      for (int slice = 0; slice < kRanks; ++slice) {
        const float* read = shared.Reduced() + slice * kSlice;
        DMLP_RETURN_IF_ERROR(shared.CheckSlice(read, SliceChecksum(read, kSlice)));
      }
      DMLP_RETURN_IF_ERROR(shared.Barrier());
    }
    return Status::Ok();
  }));
}

// The checksum: the same for any split into pieces at word boundaries (the
// backend spreads it over threads), and changed by every single bit flip, by
// swapping two words and by moving the same bytes to another length.
TEST(SliceChecksumTest, AnySplitGivesTheSameChecksumAndEveryBitFlipShows) {
  std::vector<float> slice(257);
  for (size_t i = 0; i < slice.size(); ++i) slice[i] = static_cast<float>(i) * 0.37f - 11.0f;
  const uint64_t whole = SliceChecksum(slice.data(), slice.size());
  for (size_t cut : {size_t{0}, size_t{2}, size_t{128}, size_t{256}}) {
    const uint64_t terms = ChecksumTerms(slice.data(), 0, cut) + ChecksumTerms(slice.data(), cut, slice.size() - cut);
    EXPECT_EQ(FinishChecksum(terms, slice.size()), whole) << cut;
  }
  for (size_t byte = 0; byte < slice.size() * sizeof(float); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      reinterpret_cast<unsigned char*>(slice.data())[byte] ^= static_cast<unsigned char>(1u << bit);
      EXPECT_NE(SliceChecksum(slice.data(), slice.size()), whole) << byte << ":" << bit;
      reinterpret_cast<unsigned char*>(slice.data())[byte] ^= static_cast<unsigned char>(1u << bit);
    }
  }
  std::swap(slice[10], slice[12]);
  EXPECT_NE(SliceChecksum(slice.data(), slice.size()), whole);
  std::swap(slice[10], slice[12]);
  EXPECT_NE(SliceChecksum(slice.data(), slice.size() - 1), whole);
  EXPECT_EQ(SliceChecksum(slice.data(), slice.size()), whole);
}

}  // namespace
}  // namespace dmlp
