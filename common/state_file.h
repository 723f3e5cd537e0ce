// defines: StateFileTensor, StateFileIndex, WriteStateFile, ReadStateFileIndex,
//          DigestStateFile, LoadStateImage
//
// state.safetensors (and checkpoints): the safetensors format
//   [u64 LE header length N][N bytes JSON header, space padded to 8][data]
// with tensors
//   params/Dense_<k>/bias F32 [out], params/Dense_<k>/kernel F32 [in, out], ...
//   opt/count I32 [], opt/mu/<same as params>..., opt/nu/<same as params>...
// whose data lie back to back in canonical order, so the data section IS the
// canonical state image: `tail -c +$((9 + N)) state.safetensors | sha256sum`
// prints the run's last params_sha256. `__metadata__` holds string pairs
// (step, digests, plan fingerprint).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/state_digest.h"
#include "common/state_layout.h"
#include "common/status.h"

namespace dmlp {

inline constexpr char kStateParamsPrefix[] = "params/";
inline constexpr char kStateCountName[] = "opt/count";
inline constexpr char kStateMuPrefix[] = "opt/mu/";
inline constexpr char kStateNuPrefix[] = "opt/nu/";

struct StateFileTensor {
  std::string name;
  std::string dtype;  // "F32" or "I32"
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets within the data section
};

struct StateFileIndex {
  uint64_t data_offset = 0;  // 8 + header length
  uint64_t data_size = 0;
  std::vector<StateFileTensor> tensors;  // canonical order
  std::map<std::string, std::string> metadata;
};

/// Writes the file atomically (temporary, fsync, rename, fsync dir). REQUIRES: image has layout.image_bytes().
Status WriteStateFile(const std::string& path, const StateLayout& layout, const uint8_t* image,
                      const std::map<std::string, std::string>& metadata);
/// Parses and validates the header (code STATE_FILE_INVALID, NOT_FOUND, IO_ERROR): known
/// dtypes, sizes matching shapes, data exactly covered, the canonical tensor set
/// (params/*, opt/count, opt/mu/* and opt/nu/* mirroring params). Tensors sorted canonically.
Result<StateFileIndex> ReadStateFileIndex(const std::string& path);
/// Streams the tensors in canonical order and returns the three digests (memory bounded).
Result<StateDigests> DigestStateFile(const std::string& path);
/// Reads the whole state image, checking that names and shapes are exactly `layout`'s.
Result<std::vector<uint8_t>> LoadStateImage(const std::string& path, const StateLayout& layout);

}  // namespace dmlp
