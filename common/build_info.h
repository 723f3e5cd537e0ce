// defines: BuildInfo, ThisBuild, BuildDocument, VersionText, ImageIdFromEnvironment
//
// The identity of the build a program runs from: dmlp's version, the git
// commit of its sources (and whether they had uncommitted changes), the
// compilers, the system built on (/etc/os-release) and, on the CUDA platform,
// the CUDA architectures and the toolkit and NCCL headers it was compiled against. Written at build time
// (cmake/build_id.cmake), so two builds of different sources never look the
// same. `--version` prints it, result.json and each rank's environment record
// carry it, and `dmlp-verify --against` compares it.
//
// The libraries a rank actually loads (BLIS, cuBLAS, NCCL, the driver) are
// asked at run time and recorded in the fingerprint; they can differ from the
// headers named here.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace dmlp {

struct BuildInfo {
  std::string version;             // "0.1.0"
  std::string git_commit;          // 40 hex digits, or "unknown"
  std::string git_dirty;           // "true", "false" or "unknown"
  std::string compiler;            // "GNU 12.2.0"
  std::string system;              // the build machine's /etc/os-release PRETTY_NAME (VARIANT)
  std::string cuda_compiler;       // "NVIDIA 13.0.48"; empty without the CUDA platform
  std::string cuda_architectures;  // "89,90"; empty without the CUDA platform
  std::string cuda_toolkit;        // "13.0.48"; empty without the CUDA platform
  std::string nccl_header;         // "2.28.3"; empty without the CUDA platform
};

/// The build this program was compiled from.
const BuildInfo& ThisBuild();
/// result.json's `build` object (empty CUDA fields left out), with "image_id"
/// when `image_id` is not empty.
nlohmann::json BuildDocument(const BuildInfo& build, const std::string& image_id = "");
/// DMLP_IMAGE_ID: the container image this process runs in, known only at run
/// time (`docker run -e DMLP_IMAGE_ID=$(docker inspect -f {{.Id}} dmlp)`);
/// "" when unset. ENV_INVALID when longer than 256 bytes or not printable ASCII.
Result<std::string> ImageIdFromEnvironment();
/// What `--version` prints: "<program> <version>", then one line per field (no final newline).
std::string VersionText(const std::string& program);

}  // namespace dmlp
