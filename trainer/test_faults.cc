#include "trainer/test_faults.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dmlp {

Result<BitFlipForTests> BitFlipForTests::FromEnvironment(const Environment& env, size_t image_bytes) {
  BitFlipForTests flip;
  std::optional<std::string> text = env.Get("DMLP_TEST_FLIP_BIT");
  if (!text) return flip;
  std::vector<std::string> fields;
  for (size_t begin = 0;;) {
    size_t end = text->find(':', begin);
    fields.push_back(text->substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  const Status invalid = Status::Error(
      "ENV_INVALID", "DMLP_TEST_FLIP_BIT='" + *text + "' must be UPDATE or UPDATE:BYTE:BIT (BYTE < " +
                         std::to_string(image_bytes) + ", BIT 0..7)");
  if (fields.size() != 1 && fields.size() != 3) return invalid;
  Result<int64_t> update = ParseInteger(fields[0], 1, INT64_MAX);
  if (!update.ok()) return invalid;
  flip.update = *update;
  if (fields.size() == 3) {
    Result<int64_t> byte = ParseInteger(fields[1], 0, INT64_MAX);
    Result<int64_t> bit = ParseInteger(fields[2], 0, 7);
    if (!byte.ok() || !bit.ok()) return invalid;
    flip.byte = static_cast<size_t>(*byte);
    flip.bit = static_cast<int>(*bit);
  }
  if (flip.byte >= image_bytes) return invalid;
  return flip;
}

namespace {

bool IsUpdate(int64_t update, int64_t step, int64_t microbatch, int64_t microbatches) {
  return update != 0 && (step - 1) * microbatches + microbatch + 1 == update;
}

}  // namespace

Status BitFlipForTests::AfterUpdate(Backend& backend, int64_t step, int64_t microbatch,
                                    int64_t microbatches) const {
  if (!IsUpdate(update, step, microbatch, microbatches)) return Status::Ok();
  TestFaultTarget* target = backend.test_faults();
  if (target == nullptr) return Status::Error("UNSUPPORTED", "this backend cannot flip a bit of its state");
  return target->FlipBitForTests(byte, bit);
}

Result<PartialFaultForTests> PartialFaultForTests::FromEnvironment(const Environment& env) {
  PartialFaultForTests fault;
  if (!env.Get("DMLP_TEST_CORRUPT_SHARD")) return fault;
  DMLP_ASSIGN_OR_RETURN(fault.update, RequireInteger(env, "DMLP_TEST_CORRUPT_SHARD", 1, INT64_MAX));
  return fault;
}

Status PartialFaultForTests::BeforeReduction(Backend& backend, int64_t step, int64_t microbatch,
                                             int64_t microbatches) const {
  if (!IsUpdate(update, step, microbatch, microbatches)) return Status::Ok();
  TestFaultTarget* target = backend.test_faults();
  if (target == nullptr) return Status::Error("INTERNAL", "this backend has no shard audit");
  return target->FlipPartialBitForTests(0);
}

}  // namespace dmlp
