# The CUDA platform (trainer/cuda/): `dmlp_backend_cuda`.
# Included from trainer/CMakeLists.txt after math.cmake and rendezvous.cmake.
# Without CUDA (DMLP_HAVE_CUDA OFF) the library of the same name holds only
# trainer/cuda/backend_cuda_stub.cc, so PLATFORM=cuda is a clear PLATFORM_UNAVAILABLE.

# The top-level add_compile_options apply to C/C++ sources only; CUDA sources
# get their nvcc equivalents here:
#   --fmad=false      no contraction in device code either (an FMA changes bits;
#                     device_macros.h's intrinsics are immune anyway),
#   -Xcompiler=...    the host compiler's warnings and -ffp-contract=off,
#   no fast math      IEEE division and sqrt (-prec-div/-prec-sqrt stay true).
function(dmlp_cuda_target_options target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false -Xcompiler=-Wall,-Wextra,-ffp-contract=off>)
  if(DMLP_WERROR)
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Werror>)
  endif()
  set_target_properties(${target} PROPERTIES
    # One cudart for the whole process: the shared one CUDA::cudart names.
    CUDA_RUNTIME_LIBRARY Shared)
endfunction()

if(DMLP_HAVE_CUDA)
  # CUDA sources follow CXX_STANDARD (20) when CUDA_STANDARD is unset, but
  # CMake 3.25 knows no C++20 flag for nvcc (3.26+ do). nvcc >= 12 accepts it;
  # a cache entry so the tests' and benchmarks' directories see it too.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20" CACHE INTERNAL "nvcc C++20 flag")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20" CACHE INTERNAL "nvcc C++20 flag")
  endif()
  # NCCL: /usr/include + /usr/lib/<arch> from libnccl-dev (the CUDA 12.8 image),
  # or inside the toolkit (/usr/local/cuda/{include,lib64} in CUDA 13 installs).
  find_path(DMLP_NCCL_INCLUDE_DIR NAMES nccl.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} PATHS /usr/include /usr/local/cuda/include)
  find_library(DMLP_NCCL_LIBRARY NAMES nccl
               HINTS ${CUDAToolkit_LIBRARY_DIR}
               PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE} /usr/local/cuda/lib64 /usr/local/cuda/lib)
  if(NOT DMLP_NCCL_INCLUDE_DIR OR NOT DMLP_NCCL_LIBRARY)
    message(FATAL_ERROR "NCCL not found (package libnccl-dev); "
                        "include: ${DMLP_NCCL_INCLUDE_DIR}, library: ${DMLP_NCCL_LIBRARY}")
  endif()
  message(STATUS "dmlp: NCCL ${DMLP_NCCL_LIBRARY}, CUDA architectures ${CMAKE_CUDA_ARCHITECTURES}")

  set(_dmlp_cuda_dir ${CMAKE_CURRENT_LIST_DIR}/cuda)
  add_library(dmlp_backend_cuda STATIC
    ${CMAKE_CURRENT_LIST_DIR}/cuda/backend_cuda.cc
    ${_dmlp_cuda_dir}/adam_update.cu
    ${_dmlp_cuda_dir}/bias_grad.cu
    ${_dmlp_cuda_dir}/bias_relu.cu
    ${_dmlp_cuda_dir}/cublas_check.cc
    ${_dmlp_cuda_dir}/cuda_check.cc
    ${_dmlp_cuda_dir}/data_gen.cu
    ${_dmlp_cuda_dir}/device_select.cc
    ${_dmlp_cuda_dir}/fold.cu
    ${_dmlp_cuda_dir}/gemm_cublas.cc
    ${_dmlp_cuda_dir}/gloo_staged.cc
    ${_dmlp_cuda_dir}/init_gen.cu
    ${_dmlp_cuda_dir}/mlp_cuda.cc
    ${_dmlp_cuda_dir}/nccl_check.cc
    ${_dmlp_cuda_dir}/nccl_collectives.cc
    ${_dmlp_cuda_dir}/phase_profile.cc
    ${_dmlp_cuda_dir}/softmax_xent.cu
    ${_dmlp_cuda_dir}/stream_wait.cc
    ${_dmlp_cuda_dir}/device_layout.cc
    ${_dmlp_cuda_dir}/nccl_defaults.cc
  )
  dmlp_cuda_target_options(dmlp_backend_cuda)
  target_include_directories(dmlp_backend_cuda PUBLIC ${PROJECT_SOURCE_DIR})
  # Error locations name files relative to the tree (cuda/cuda_check.cc).
  set_source_files_properties(${_dmlp_cuda_dir}/cuda_check.cc PROPERTIES
    COMPILE_DEFINITIONS "DMLP_SOURCE_DIR=\"${PROJECT_SOURCE_DIR}/\"")
  target_include_directories(dmlp_backend_cuda SYSTEM PUBLIC ${DMLP_NCCL_INCLUDE_DIR})
  target_link_libraries(dmlp_backend_cuda PUBLIC
    dmlp_common dmlp_trainer_math dmlp_rendezvous dmlp_collectives_gloo
    CUDA::cudart CUDA::cublas ${DMLP_NCCL_LIBRARY} ${CMAKE_DL_LIBS})
  include(${_dmlp_cuda_dir}/nccl_version.cmake)
else()
  # device_layout.cc and nccl_defaults.cc hold no CUDA: every build has them.
  add_library(dmlp_backend_cuda STATIC ${CMAKE_CURRENT_LIST_DIR}/cuda/backend_cuda_stub.cc
              ${CMAKE_CURRENT_LIST_DIR}/cuda/device_layout.cc ${CMAKE_CURRENT_LIST_DIR}/cuda/nccl_defaults.cc)
  target_include_directories(dmlp_backend_cuda PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(dmlp_backend_cuda PUBLIC dmlp_common)
endif()
