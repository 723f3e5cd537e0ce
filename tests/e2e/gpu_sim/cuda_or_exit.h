// The check the simulator's test programs share: a failed CUDA call prints
// file:line, the call and CUDA's words to stderr and exits 2, which the tests
// (gpu_sim_e2e.py) tell apart from a wrong result (exit 1).
#ifndef DMLP_TESTS_E2E_GPU_SIM_CUDA_OR_EXIT_H_
#define DMLP_TESTS_E2E_GPU_SIM_CUDA_OR_EXIT_H_

#include <cstdio>
#include <cstdlib>

#define CUDA_OR_EXIT(call)                                                        \
  do {                                                                            \
    cudaError_t error_ = (call);                                                  \
    if (error_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                   cudaGetErrorString(error_));                                   \
      std::exit(2);                                                               \
    }                                                                             \
  } while (0)

#endif  // DMLP_TESTS_E2E_GPU_SIM_CUDA_OR_EXIT_H_
