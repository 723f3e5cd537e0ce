# The build's identity (common/build_info.h): a target that runs
# cmake/build_id.cmake on every build and writes generated/build_id.cc, compiled
# into dmlp_common. Included from the top-level CMakeLists.txt after trainer/,
# whose CUDA part finds NCCL (DMLP_NCCL_INCLUDE_DIR, a cache variable).
#
# DMLP_GIT_COMMIT / DMLP_GIT_DIRTY: for a tree without .git (the Docker build
# context has none: the Dockerfile passes them as build arguments).
set(DMLP_GIT_COMMIT "" CACHE STRING "The git commit of the sources, when the tree has no .git")
set(DMLP_GIT_DIRTY "" CACHE STRING "With DMLP_GIT_COMMIT: true, false or unknown")

set(_dmlp_cuda_compiler "")
set(_dmlp_cuda_architectures "")
set(_dmlp_cuda_toolkit "")
if(DMLP_HAVE_CUDA)
  set(_dmlp_cuda_compiler "${CMAKE_CUDA_COMPILER_ID} ${CMAKE_CUDA_COMPILER_VERSION}")
  # "89;90" would split the command line below: commas instead.
  string(REPLACE ";" "," _dmlp_cuda_architectures "${CMAKE_CUDA_ARCHITECTURES}")
  set(_dmlp_cuda_toolkit "${CUDAToolkit_VERSION}")
endif()

add_custom_target(dmlp_build_id
  COMMAND ${CMAKE_COMMAND}
          -DOUTPUT=${DMLP_BUILD_ID_SOURCE}
          -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DGIT_COMMIT=${DMLP_GIT_COMMIT}
          -DGIT_DIRTY=${DMLP_GIT_DIRTY}
          -DVERSION=${PROJECT_VERSION}
          "-DCOMPILER=${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}"
          "-DCUDA_COMPILER=${_dmlp_cuda_compiler}"
          "-DCUDA_ARCHITECTURES=${_dmlp_cuda_architectures}"
          -DCUDA_TOOLKIT=${_dmlp_cuda_toolkit}
          -DNCCL_INCLUDE_DIR=${DMLP_NCCL_INCLUDE_DIR}
          -P ${PROJECT_SOURCE_DIR}/cmake/build_id.cmake
  BYPRODUCTS ${DMLP_BUILD_ID_SOURCE}
  COMMENT "dmlp: build identity"
  VERBATIM)
add_dependencies(dmlp_common dmlp_build_id)
