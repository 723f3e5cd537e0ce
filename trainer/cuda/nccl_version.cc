#include "trainer/cuda/nccl_version.h"

#include <dlfcn.h>
#include <nccl.h>

#include "common/format/error_codes.h"
#include "trainer/cuda/nccl_check.h"

namespace dmlp::cuda {
namespace {

// The file the dynamic loader took ncclGetVersion from; "?" when it cannot say.
std::string LoadedNcclPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&ncclGetVersion), &info) == 0 ||
      info.dli_fname == nullptr)
    return "?";
  return info.dli_fname;
}

// ncclGetVersion of the library the loader took.
Result<int> LoadedNcclVersionCode() {
  int code = 0;
  NCCL_CHECK(nullptr, ncclGetVersion(&code));
  return code;
}

}  // namespace

std::string NcclVersionText(int code) {
  const int major_unit = code >= 10000 ? 10000 : 1000;  // NCCL_VERSION's two encodings
  return std::to_string(code / major_unit) + "." + std::to_string(code % major_unit / 100) + "." +
         std::to_string(code % 100);
}

Status CompareNcclVersions(int header_code, int library_code, const std::string& library_path) {
  if (header_code == library_code) return Status::Ok();
  return Status::Error(kNcclVersionMismatch,
                       "header " + NcclVersionText(header_code) + ", library " +
                           NcclVersionText(library_code) + " (" + library_path +
                           "): dmlp was compiled with another NCCL than the one it loaded");
}

Result<std::string> NcclLibraryVersion() {
  DMLP_ASSIGN_OR_RETURN(const int code, LoadedNcclVersionCode());
  return NcclVersionText(code);
}

Result<std::string> CheckedNcclLibraryVersion() {
  DMLP_ASSIGN_OR_RETURN(const int code, LoadedNcclVersionCode());
  DMLP_RETURN_IF_ERROR(CompareNcclVersions(NCCL_VERSION_CODE, code, LoadedNcclPath()));
  return NcclVersionText(code);
}

}  // namespace dmlp::cuda
