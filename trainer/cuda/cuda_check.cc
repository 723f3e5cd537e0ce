#include "trainer/cuda/cuda_check.h"

#include <unistd.h>

#include <atomic>
#include <string>
#include <string_view>

#include "common/format/error_codes.h"

namespace dmlp::cuda {
namespace {

std::atomic<int> error_rank{-1};

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown";
  return name;
}

// __FILE__ is the path the compiler was given: the absolute path CMake passes,
// or one relative to the build folder where a compiler launcher rewrote it
// (ccache's base_dir: "../../tests/unit/cuda_device_test.cc"). Users want the
// path in the tree either way. DMLP_SOURCE_DIR ends with '/' (trainer/cuda/CMakeLists.txt).
const char* RelativeToSource(const char* file) {
#ifdef DMLP_SOURCE_DIR
  const std::string_view root(DMLP_SOURCE_DIR);
  if (std::string_view(file).substr(0, root.size()) == root) return file + root.size();
#endif
  for (;;) {
    const std::string_view rest(file);
    if (rest.substr(0, 3) == "../") {
      file += 3;
    } else if (rest.substr(0, 2) == "./") {
      file += 2;
    } else {
      return file;
    }
  }
}

}  // namespace

void SetErrorRank(int rank) { error_rank.store(rank); }

std::string ErrorLocation(const char* file, int line) {
  static const std::string host = HostName();
  const int rank = error_rank.load();
  return std::string(" at ") + RelativeToSource(file) + ":" + std::to_string(line) + " [rank " +
         (rank < 0 ? std::string("?") : std::to_string(rank)) + " on host " + host + "]";
}

Status CudaErrorStatus(cudaError_t error, const char* call, const char* file, int line) {
  return Status::Error(kCudaError, std::string(call) + ": " + cudaGetErrorString(error) + " (" +
                                         cudaGetErrorName(error) + ")" + ErrorLocation(file, line));
}

}  // namespace dmlp::cuda
