#include "common/build_info.h"

#include <cstdlib>

#include "common/format/error_codes.h"

namespace dmlp {
namespace build_id {
// Defined in the generated build_id.cc (cmake/build_id.cmake).
extern const char kVersion[];
extern const char kGitCommit[];
extern const char kGitDirty[];
extern const char kCompiler[];
extern const char kSystem[];
extern const char kCudaCompiler[];
extern const char kCudaArchitectures[];
extern const char kCudaToolkit[];
extern const char kNcclHeader[];
}  // namespace build_id

const BuildInfo& ThisBuild() {
  static const BuildInfo build{build_id::kVersion,      build_id::kGitCommit,
                               build_id::kGitDirty,     build_id::kCompiler,
                               build_id::kSystem,       build_id::kCudaCompiler,
                               build_id::kCudaArchitectures, build_id::kCudaToolkit,
                               build_id::kNcclHeader};
  return build;
}

nlohmann::json BuildDocument(const BuildInfo& build, const std::string& image_id) {
  nlohmann::json doc = {{"version", build.version},
                        {"git_commit", build.git_commit},
                        {"git_dirty", build.git_dirty},
                        {"compiler", build.compiler}};
  if (!build.system.empty()) doc["system"] = build.system;
  if (!build.cuda_compiler.empty()) doc["cuda_compiler"] = build.cuda_compiler;
  if (!build.cuda_architectures.empty()) doc["cuda_architectures"] = build.cuda_architectures;
  if (!build.cuda_toolkit.empty()) doc["cuda_toolkit"] = build.cuda_toolkit;
  if (!build.nccl_header.empty()) doc["nccl_header"] = build.nccl_header;
  if (!image_id.empty()) doc["image_id"] = image_id;
  return doc;
}

Result<std::string> ImageIdFromEnvironment() {
  const char* value = std::getenv("DMLP_IMAGE_ID");
  if (value == nullptr) return std::string();
  const std::string id(value);
  // An id goes into every env line and result.json: bounded and plain, so it
  // can never break a line or a report.
  bool plain = id.size() <= 256;
  for (char c : id) plain = plain && c > ' ' && c < 127;
  if (!plain)
    return Status::Error(kEnvInvalid, "DMLP_IMAGE_ID must be at most 256 printable ASCII "
                                        "characters without spaces (an image id such as sha256:<hex>)");
  return id;
}

std::string VersionText(const std::string& program) {
  const BuildInfo& build = ThisBuild();
  std::string text = program + " " + build.version + "\n";
  text += "commit: " + build.git_commit + (build.git_dirty == "true" ? " (with uncommitted changes)" : "") +
          (build.git_dirty == "unknown" ? " (uncommitted changes unknown)" : "") + "\n";
  text += "compiler: " + build.compiler + "\n";
  if (!build.system.empty()) text += "built on: " + build.system + "\n";
  if (build.cuda_compiler.empty()) {
    text += "cuda: not built\n";
  } else {
    text += "cuda: " + build.cuda_compiler + ", toolkit " + build.cuda_toolkit + ", architectures " +
            build.cuda_architectures + ", NCCL header " + build.nccl_header + "\n";
  }
  text.pop_back();  // the caller ends the last line
  return text;
}

}  // namespace dmlp
