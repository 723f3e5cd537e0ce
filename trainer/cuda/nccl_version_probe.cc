// Configure-time probe (trainer/cuda/nccl_version.cmake): prints the NCCL
// version code of the header it was compiled with and that of the library it
// runs with, "HEADER LIBRARY", and the library's file.
#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>

int main() {
  int library = 0;
  if (ncclGetVersion(&library) != ncclSuccess) return 1;
  Dl_info info{};
  const bool found = dladdr(reinterpret_cast<const void*>(&ncclGetVersion), &info) != 0 &&
                     info.dli_fname != nullptr;
  std::printf("%d %d %s\n", NCCL_VERSION_CODE, library, found ? info.dli_fname : "?");
  return 0;
}
