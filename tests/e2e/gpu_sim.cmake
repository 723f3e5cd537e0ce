# The GPU simulator for real (tests/e2e/gpu_sim/gpu_sim_e2e.py): GPGPU-Sim,
# patched, built by tools/gpu-sim.sh with CUDA 11.8, running CUDA programs
# compiled by that nvcc.
#   e2e.gpu_sim.build         tools/gpu-sim.sh build (the simulator, then dmlp for
#                             it): the fixture the others need.
#                             Minutes on a fresh machine (CI), milliseconds once
#                             the cache holds the build, so CI pays it once.
#   e2e.gpu_sim.fma_bits      fma.rn chains and IEEE add/mul/div/sqrt .rn, special
#                             values included, and the f64 operations and conversions
#                             ExpF/LogF run, bit for bit against the host
#   e2e.gpu_sim.stream_order  memset and synchronize on a stream keep the order
#   e2e.gpu_sim.device_api    the calls that describe a device (PCI bus id, ...) answer
#   e2e.gpu_sim.kernels       dmlp's own kernels (trainer/cuda/*.cu) against its
#                             CPU code on small odd shapes, bit for bit
#                             (softmax cross-entropy and its ExpF/LogF included)
#   e2e.gpu_sim.ordered_sgemm  the ordered SGEMM (trainer/cuda/ordered_sgemm.cu)
#                             against the CPU's OrderedSgemm, bit for bit
#   e2e.gpu_sim.ordered_sgemm_planted  the same check on a copy of the kernel
#                             with its chain order changed must fail
#   e2e.gpu_sim.cli           usage errors, refused caches (no build needed)
# Exit 77 (SKIP) where the simulator cannot be built and CI is unset; in CI a
# failure. The build runs under nice -n 19 beside the other tests: they keep
# the machine first and no lock is needed.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(gpu_sim_environment
    "DMLP_SOURCE_DIR=${PROJECT_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1")
foreach(case build fma_bits stream_order device_api kernels ordered_sgemm ordered_sgemm_planted cli)
  add_test(NAME e2e.gpu_sim.${case}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/gpu_sim/gpu_sim_e2e.py ${case})
  set_tests_properties(e2e.gpu_sim.${case} PROPERTIES
    ENVIRONMENT "${gpu_sim_environment}"
    SKIP_RETURN_CODE 77
    TIMEOUT 600)
endforeach()
# A fresh machine fetches CUDA 11.8 (about 90 MB) and compiles the simulator:
# 277 s on an idle 2-core machine, far more on a busy one.
set_tests_properties(e2e.gpu_sim.build PROPERTIES FIXTURES_SETUP gpu_sim TIMEOUT 3000)
set_tests_properties(e2e.gpu_sim.fma_bits e2e.gpu_sim.stream_order e2e.gpu_sim.device_api
                     e2e.gpu_sim.kernels e2e.gpu_sim.ordered_sgemm e2e.gpu_sim.ordered_sgemm_planted
                     PROPERTIES
  FIXTURES_REQUIRED gpu_sim)

# dmlp's own programs built for the simulator by `tools/gpu-sim.sh build` (in
# the fixture above), against the CPU platform's programs of this build:
#   e2e.gpu_sim.run_ranks     `tools/gpu-sim.sh run --ranks`: a working directory
#                             a rank (the real dmlp-launch, a stand-in rank)
#   e2e.gpu_sim.job_1_rank, .job_2_ranks  PLATFORM=cuda GEMM=ordered
#                             COLLECTIVES=gloo at odd tiny sizes through
#                             dmlp-launch, each rank on a simulated GPU: PASS,
#                             and identical to the CPU run (dmlp-verify --against)
#   e2e.gpu_sim.resume_cpu_to_gpu, .resume_gpu_to_cpu  a checkpoint resumed on
#                             the other platform gives the uninterrupted run's bits
#   e2e.gpu_sim.planted_bias_relu  a dmlp-train whose SGEMM's bias/ReLU epilogue
#                             skips its last column tile must fail the comparison
#   e2e.gpu_sim.cuda_test     tests/unit's Cuda* cases on the simulator, but a
#                             listed few (each with its reason)
foreach(case run_ranks job_1_rank job_2_ranks resume_cpu_to_gpu resume_gpu_to_cpu planted_bias_relu)
  add_test(NAME e2e.gpu_sim.${case}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/gpu_sim/gpu_sim_jobs.py ${case})
endforeach()
add_test(NAME e2e.gpu_sim.cuda_test
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/gpu_sim/gpu_sim_cuda_test.py)
set_tests_properties(e2e.gpu_sim.run_ranks e2e.gpu_sim.job_1_rank e2e.gpu_sim.job_2_ranks e2e.gpu_sim.resume_cpu_to_gpu
                     e2e.gpu_sim.resume_gpu_to_cpu e2e.gpu_sim.planted_bias_relu e2e.gpu_sim.cuda_test
                     PROPERTIES
  ENVIRONMENT "${gpu_sim_environment};DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin"
  SKIP_RETURN_CODE 77
  TIMEOUT 1800
  FIXTURES_REQUIRED gpu_sim)
