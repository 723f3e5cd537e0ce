# The layering check (cmake/layering_check.cmake) on a scratch copy of the
# tree, with the build's own manifest (what CMake knows of the targets):
#   cmake -DCASE=<case> -DSOURCE_DIR=<tree> -DMANIFEST=<manifest> -DCHECK=<check script>
#         -DSCRATCH=<empty folder> -P planted_include_test.cmake
# Cases:
#   clean             the copy as it is: the check passes (so the failures
#                     below come from the planted line alone)
#   plan_includes_cuda     trainer/plan.h includes a trainer/cuda/ header
#   math_includes_cpu      trainer/math/sample_loops.cc includes a trainer/cpu/ header
#   output_includes_verify trainer/output/run_output.h includes a verify/ header
#   folder_of_two_libraries  a second library with a source in trainer/cpu/
#                            (added to a copy of the manifest)
# A planted case passes when the check fails and names the file, the include,
# the library that lacks the dependency and the library the header belongs to
# (the last case: the folder and both libraries).
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${SCRATCH}")
foreach(folder common launch trainer verify)
  file(COPY "${SOURCE_DIR}/${folder}" DESTINATION "${SCRATCH}")
endforeach()

# plant FILE INCLUDE: the include as the file's first include line.
function(plant file include)
  file(READ "${SCRATCH}/${file}" text)
  string(FIND "${text}" "#include" at)
  if(at LESS 0)
    message(FATAL_ERROR "FAIL: ${file} has no #include to plant before")
  endif()
  string(SUBSTRING "${text}" 0 ${at} head)
  string(SUBSTRING "${text}" ${at} -1 tail)
  file(WRITE "${SCRATCH}/${file}" "${head}#include \"${include}\"\n${tail}")
endfunction()

set(expected "")
if(CASE STREQUAL "plan_includes_cuda")
  plant(trainer/plan.h trainer/cuda/cuda_check.h)
  set(expected "trainer/plan.h includes \"trainer/cuda/cuda_check.h\", a header of dmlp_trainer_cuda"
               "dmlp_trainer_core does not declare dmlp_trainer_cuda")
elseif(CASE STREQUAL "math_includes_cpu")
  plant(trainer/math/sample_loops.cc trainer/cpu/gemm_cpu.h)
  set(expected "trainer/math/sample_loops.cc includes \"trainer/cpu/gemm_cpu.h\", a header of dmlp_trainer_cpu"
               "dmlp_trainer_math does not declare dmlp_trainer_cpu")
elseif(CASE STREQUAL "output_includes_verify")
  plant(trainer/output/run_output.h verify/findings.h)
  set(expected "trainer/output/run_output.h includes \"verify/findings.h\", a header of dmlp_verify_lib"
               "dmlp_trainer_output does not declare dmlp_verify_lib")
elseif(CASE STREQUAL "folder_of_two_libraries")
  file(READ "${MANIFEST}" manifest)
  string(APPEND manifest "list(APPEND layer_targets dmlp_second_cpu)\n"
                         "set(layer_dmlp_second_cpu_type STATIC_LIBRARY)\n"
                         "set(layer_dmlp_second_cpu_directory trainer/cpu)\n"
                         "set(layer_dmlp_second_cpu_sources trainer/cpu/gemm_cpu.cc)\n"
                         "set(layer_dmlp_second_cpu_links dmlp_common)\n")
  set(MANIFEST "${SCRATCH}/manifest.cmake")
  file(WRITE "${MANIFEST}" "${manifest}")
  set(expected "trainer/cpu/ holds sources of two libraries, dmlp_trainer_cpu and dmlp_second_cpu")
elseif(NOT CASE STREQUAL "clean")
  message(FATAL_ERROR "FAIL: unknown case '${CASE}'")
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" "-DMANIFEST=${MANIFEST}" "-DSOURCE_DIR=${SCRATCH}" -P "${CHECK}"
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
file(REMOVE_RECURSE "${SCRATCH}")
# CMake wraps a long error message; one line again, for the searches below.
string(REGEX REPLACE "[ \n]+" " " flat "${output}")
if(CASE STREQUAL "clean")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "FAIL: the check refuses the unchanged tree (status ${status}):\n${output}")
  endif()
  message("PASS: the unchanged tree passes the check")
  return()
endif()
if(status EQUAL 0)
  message(FATAL_ERROR "FAIL: the check passed a planted wrong-way include (${CASE}):\n${output}")
endif()
foreach(text IN LISTS expected)
  string(FIND "${flat}" "${text}" at)
  if(at LESS 0)
    message(FATAL_ERROR "FAIL: the check's message lacks '${text}':\n${output}")
  endif()
endforeach()
message("PASS: ${CASE} refused:\n${output}")
