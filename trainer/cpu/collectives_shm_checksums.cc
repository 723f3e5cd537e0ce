// SharedMemoryCollectives: the checksums of what the ranks publish (see
// collectives_shm.h and slice_checksum.h): how a writer seals a slice of the
// reduction area, and how a reader checks it or an outbox block it copied.
#include <cstdio>
#include <cstring>
#include <string>

#include "trainer/cpu/collectives_shm.h"
#include "trainer/cpu/slice_checksum.h"

namespace dmlp {
namespace {

// " (checksum <sealed> published, <read> read)": what a refusal shows of the two.
std::string BothChecksums(uint64_t sealed, uint64_t read) {
  char text[64];
  std::snprintf(text, sizeof text, " (checksum %016llx published, %016llx read)",
                static_cast<unsigned long long>(sealed), static_cast<unsigned long long>(read));
  return text;
}

}  // namespace

static_assert(std::atomic<uint64_t>::is_always_lock_free, "a checksum shared between processes");

// Relaxed: the barrier's release and acquire (PublishAndWait) order the
// checksum with the slice's bytes.
void SharedMemoryCollectives::SealSlice(const float* slice, uint64_t checksum) {
  Checksums()[static_cast<size_t>(slice - Partials(0)) / slice_floats_].store(checksum, std::memory_order_relaxed);
}

Status SharedMemoryCollectives::CheckSlice(const float* slice, uint64_t checksum) {
  if (!broken_.ok()) return broken_;
  const size_t index = static_cast<size_t>(slice - Partials(0)) / slice_floats_;
  const uint64_t sealed = Checksums()[index].load(std::memory_order_relaxed);
  if (sealed == checksum) return Status::Ok();
  return Fail("reduce", "the shared segment's " + DescribeSlice(index) + " changed after its writer published it" +
                            BothChecksums(sealed, checksum));
}

std::string SharedMemoryCollectives::DescribeSlice(size_t index) const {
  const size_t first = index * slice_floats_;
  const size_t partials = static_cast<size_t>(world_size_) * partial_floats_;
  if (first >= partials) {
    return "reduced vector, slice " + std::to_string((first - partials) / slice_floats_);
  }
  return "rank " + std::to_string(first / partial_floats_) + "'s partials, slice " +
         std::to_string(first % partial_floats_ / slice_floats_);
}

Status SharedMemoryCollectives::ReadOutboxBlock(const char* op, int rank, int block, size_t offset, size_t bytes,
                                                uint8_t* to) {
  std::memcpy(to, Outbox(rank, op_) + offset, bytes);
  // The copy's checksum: exactly the bytes this call delivers.
  const uint64_t read = SliceChecksum(reinterpret_cast<const float*>(to), bytes / sizeof(float));
  const uint64_t sealed = OutboxChecksum(rank, op_, block).load(std::memory_order_relaxed);
  if (read == sealed) return Status::Ok();
  const std::string writer = "rank " + std::to_string(rank);
  return Fail(op, "the shared segment's outbox of " + writer + ", block " + std::to_string(block) +
                      ", changed after " + writer + " published it" + BothChecksums(sealed, read));
}

}  // namespace dmlp
