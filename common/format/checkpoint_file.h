// defines: kCheckpointStepKey, kCheckpointDigestKey, kCheckpointFingerprintKey,
//          CheckpointFileName, CheckpointStepOfName
//
// checkpoint-<step, 8 digits>.safetensors: rank 0 writes them in OUT_DIR
// (trainer/output/checkpoint.cc, CHECKPOINT_EVERY and CHECKPOINT_KEEP) in the
// state-file format, and dmlp-verify --replay starts its segments from them
// (verify/replay_audit.cc). The name and the metadata keys live here so the
// writer and the reader cannot drift.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace dmlp {

// Metadata of a checkpoint file: its step, the receipt digest of that step
// (SHA-256 of the state image) and the bits fingerprint of the plan that wrote it.
inline constexpr char kCheckpointStepKey[] = "step";
inline constexpr char kCheckpointDigestKey[] = "params_sha256";
inline constexpr char kCheckpointFingerprintKey[] = "checkpoint_fingerprint";

inline constexpr std::string_view kCheckpointPrefix = "checkpoint-";
inline constexpr std::string_view kCheckpointSuffix = ".safetensors";
inline constexpr size_t kCheckpointStepDigits = 8;

/// "checkpoint-00000012.safetensors"
inline std::string CheckpointFileName(int64_t step) {
  char digits[32];
  std::snprintf(digits, sizeof digits, "%08lld", static_cast<long long>(step));
  return std::string(kCheckpointPrefix) + digits + std::string(kCheckpointSuffix);
}

/// The step a checkpoint file name stands for; nullopt for any other name.
inline std::optional<int64_t> CheckpointStepOfName(std::string_view name) {
  if (name.size() != kCheckpointPrefix.size() + kCheckpointStepDigits + kCheckpointSuffix.size() ||
      name.substr(0, kCheckpointPrefix.size()) != kCheckpointPrefix ||
      name.substr(kCheckpointPrefix.size() + kCheckpointStepDigits) != kCheckpointSuffix)
    return std::nullopt;
  int64_t step = 0;
  for (char digit : name.substr(kCheckpointPrefix.size(), kCheckpointStepDigits)) {
    if (digit < '0' || digit > '9') return std::nullopt;
    step = step * 10 + (digit - '0');
  }
  return step;
}

}  // namespace dmlp
