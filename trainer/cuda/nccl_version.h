// defines: NcclVersionText, CompareNcclVersions, NcclLibraryVersion, CheckedNcclLibraryVersion
//
// NCCL's header and library arrive separately (libnccl-dev and libnccl2, a
// toolkit folder, a wheel, LD_LIBRARY_PATH), and nothing in the compiler or
// the loader notices when a build pairs the header of one NCCL with the
// library of another: a 2.28 header with a 2.25 library compiled, linked and
// ran. The structures dmlp hands NCCL (ncclConfig_t, ncclUniqueId) are laid
// out by the header, so a dmlp process runs only with the NCCL it was
// compiled for. Configure checks the same pair (trainer/cuda/nccl_version.cmake).
#pragma once

#include <string>

#include "common/status.h"

namespace dmlp::cuda {

/// "2.25.1" from an NCCL version code: major*10000 + minor*100 + patch since
/// 2.9, major*1000 + minor*100 + patch before (NCCL_VERSION in nccl.h).
std::string NcclVersionText(int code);

/// OK when the codes are equal; otherwise NCCL_VERSION_MISMATCH:
/// "header 2.28.9, library 2.25.1 (/usr/lib/x86_64-linux-gnu/libnccl.so.2)".
Status CompareNcclVersions(int header_code, int library_code, const std::string& library_path);

/// The version of the NCCL library this process runs with ("2.25.1"), not
/// compared with the header: for a process that creates no communicator
/// (1 rank, COLLECTIVES=gloo), where a mismatch cannot matter.
Result<std::string> NcclLibraryVersion();

/// The version of the NCCL library this process runs with ("2.25.1"), after
/// CompareNcclVersions against the header it was compiled with (NCCL_VERSION_CODE).
Result<std::string> CheckedNcclLibraryVersion();

}  // namespace dmlp::cuda
