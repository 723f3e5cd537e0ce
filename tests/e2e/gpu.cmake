# The GPU kit's own pieces (tests/gpu/): cuda_freeze, the program the freeze
# row runs (built with CUDA's headers; libcuda is opened at run time),
# dmlp_draws, dmlp's samples and initial parameters for the fidelity row (its
# cuda platform only in a CUDA build), and the CPU-side tests of the kit's rows.
add_executable(dmlp_draws ${PROJECT_SOURCE_DIR}/tests/gpu/dmlp_draws/main.cc)
target_link_libraries(dmlp_draws PRIVATE dmlp_trainer_cuda dmlp_trainer_math dmlp_common
                      CLI11::CLI11)
if(DMLP_HAVE_CUDA)
  target_compile_definitions(dmlp_draws PRIVATE DMLP_DRAWS_CUDA=1)
endif()
if(DMLP_HAVE_CUDA_CHECKPOINT)
  add_library(dmlp_cuda_freeze STATIC ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_freeze/cuda_freeze.cc)
  target_include_directories(dmlp_cuda_freeze PUBLIC ${PROJECT_SOURCE_DIR})
  target_include_directories(dmlp_cuda_freeze SYSTEM PUBLIC ${CUDAToolkit_INCLUDE_DIRS})
  target_link_libraries(dmlp_cuda_freeze PUBLIC dmlp_common ${CMAKE_DL_LIBS})
  add_executable(cuda_freeze ${PROJECT_SOURCE_DIR}/tests/gpu/cuda_freeze/main.cc)
  target_link_libraries(cuda_freeze PRIVATE dmlp_cuda_freeze CLI11::CLI11)
endif()

# The "digest threads" row (tests/gpu/digest_row.sh) against gpu_bench
# stand-ins: one from before --digest-sweep (SKIP, not the FAIL it was), one
# printing digest_bench's real host figures (the row reads every K).
if(DMLP_BUILD_BENCH)
  add_test(NAME e2e.gpu.DigestRow
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu/digest_row_test.sh
                   ${PROJECT_SOURCE_DIR}/tests/gpu/digest_row.sh $<TARGET_FILE:digest_bench>)
  set_tests_properties(e2e.gpu.DigestRow PROPERTIES TIMEOUT 300)
endif()

# The "fidelity jax" row (tests/gpu/fidelity_row.sh), its CPU half: the real
# dmlp_draws (cpu) against the real jax of the reference's venv at the spec's
# sizes, and stand-ins for a broken dmlp and a machine without a GPU. Needs
# the reference's python (tools/test-all.sh passes DMLP_REFERENCE_PYTHON):
# SKIP without it, a failure in CI.
add_test(NAME e2e.gpu.FidelityRow
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/gpu/fidelity_row_test.sh
                 ${PROJECT_SOURCE_DIR}/tests/gpu/fidelity_row.sh $<TARGET_FILE:dmlp_draws>)
set_tests_properties(e2e.gpu.FidelityRow PROPERTIES
  ENVIRONMENT "PYTHONDONTWRITEBYTECODE=1"
  SKIP_RETURN_CODE 77
  TIMEOUT 600
  LABELS "e2e;reference")

# Python unittest modules of tests/e2e/gpu/, one ctest case each:
#   ChecksWithoutGpu  tests/gpu/run_gpu_checks.sh --kit on stand-in kits: this
#                     build's programs without a GPU (the rows and verdict the
#                     device shows, the usage errors), and stand-ins for a GPU
#                     machine's (the plan, the budget, preflight.txt);
#   KitRows           every row of the kit can pass and can fail: each against
#                     stand-ins for a GPU machine's programs, with and without a
#                     planted fault; and the one name pattern of the unit tests
#                     that skip where a GPU is.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  foreach(case_and_module ChecksWithoutGpu:run_gpu_checks_test KitRows:kit_rows_test)
    string(REPLACE ":" ";" case_and_module ${case_and_module})
    list(GET case_and_module 0 case)
    list(GET case_and_module 1 module)
    add_test(NAME e2e.gpu.${case}
             COMMAND ${Python3_EXECUTABLE} -m unittest -v ${module}
             WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/gpu)
    set_tests_properties(e2e.gpu.${case} PROPERTIES
      ENVIRONMENT "DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;DMLP_SOURCE_DIR=${PROJECT_SOURCE_DIR};PYTHONDONTWRITEBYTECODE=1"
      TIMEOUT 300 LABELS "e2e")
  endforeach()
endif()
