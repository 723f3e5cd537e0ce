# NCCL header and library must be one NCCL (trainer/cuda/nccl_version.h says
# why). Included from trainer/cuda/CMakeLists.txt once DMLP_NCCL_INCLUDE_DIR and
# DMLP_NCCL_LIBRARY are found and dmlp_trainer_cuda exists.
#
# Configure: a probe compiled with the header found and linked with the
# library found prints both version codes; different codes stop the configure
# step, naming both files. Where the probe cannot run (cross-compiling), the
# same check runs at start-up: NcclComm::LibraryVersion fails with
# NCCL_VERSION_MISMATCH before any communicator exists.
target_sources(dmlp_trainer_cuda PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nccl_version.cc)

function(_dmlp_nccl_version_text code out)
  if(code GREATER_EQUAL 10000)  # NCCL_VERSION's encoding since 2.9
    math(EXPR _major "${code} / 10000")
    math(EXPR _minor "${code} % 10000 / 100")
  else()
    math(EXPR _major "${code} / 1000")
    math(EXPR _minor "${code} % 1000 / 100")
  endif()
  math(EXPR _patch "${code} % 100")
  set(${out} "${_major}.${_minor}.${_patch}" PARENT_SCOPE)
endfunction()

# Probed at every configure (a second): an upgraded package keeps its paths.
block(SCOPE_FOR VARIABLES)
  try_run(_dmlp_nccl_run _dmlp_nccl_compiled
          ${CMAKE_BINARY_DIR}/nccl-version-probe ${CMAKE_CURRENT_LIST_DIR}/nccl_version_probe.cc
          CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${DMLP_NCCL_INCLUDE_DIR};${CUDAToolkit_INCLUDE_DIRS}"
          LINK_LIBRARIES ${DMLP_NCCL_LIBRARY} ${CMAKE_DL_LIBS}
          COMPILE_OUTPUT_VARIABLE _dmlp_nccl_compile_output
          RUN_OUTPUT_VARIABLE _dmlp_nccl_output)
  if(NOT _dmlp_nccl_compiled)
    message(FATAL_ERROR "dmlp: the NCCL version probe does not build with "
                        "${DMLP_NCCL_INCLUDE_DIR}/nccl.h and ${DMLP_NCCL_LIBRARY}:\n"
                        "${_dmlp_nccl_compile_output}")
  endif()
  if(NOT _dmlp_nccl_run STREQUAL "0" OR NOT _dmlp_nccl_output MATCHES "^([0-9]+) ([0-9]+) ([^\n]*)")
    message(WARNING "dmlp: the NCCL version probe did not run (${_dmlp_nccl_run}); "
                    "dmlp-train checks the versions at start-up")
  else()
    _dmlp_nccl_version_text(${CMAKE_MATCH_1} _dmlp_nccl_header)
    _dmlp_nccl_version_text(${CMAKE_MATCH_2} _dmlp_nccl_library)
    set(_dmlp_nccl_loaded "${CMAKE_MATCH_3}")
    if(NOT CMAKE_MATCH_1 EQUAL CMAKE_MATCH_2)
      message(FATAL_ERROR
        "dmlp: NCCL_VERSION_MISMATCH: header ${_dmlp_nccl_header} "
        "(${DMLP_NCCL_INCLUDE_DIR}/nccl.h), library ${_dmlp_nccl_library} "
        "(${DMLP_NCCL_LIBRARY}, loaded as ${_dmlp_nccl_loaded}). Point "
        "DMLP_NCCL_INCLUDE_DIR and DMLP_NCCL_LIBRARY at one NCCL.")
    endif()
    message(STATUS "dmlp: NCCL ${_dmlp_nccl_header}: header ${DMLP_NCCL_INCLUDE_DIR}/nccl.h, "
                   "library ${DMLP_NCCL_LIBRARY} (same version)")
  endif()
endblock()
