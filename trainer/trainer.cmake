# The shared trainer (plan, outputs, digest pipeline, training loop), the CPU
# backend, and the dmlp-train executable. Included last from trainer/CMakeLists.txt.
add_library(dmlp_trainer_core STATIC
  ${CMAKE_CURRENT_LIST_DIR}/cpu/backend_cpu.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/checkpoint.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/digest_pipeline.cc
  ${CMAKE_CURRENT_LIST_DIR}/checks/divergence_check.cc
  ${CMAKE_CURRENT_LIST_DIR}/cgroup_memory.cc
  ${CMAKE_CURRENT_LIST_DIR}/memory_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/output_lock.cc
  ${CMAKE_CURRENT_LIST_DIR}/checks/job_identity.cc
  ${CMAKE_CURRENT_LIST_DIR}/plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/checks/shard_audit.cc
  ${CMAKE_CURRENT_LIST_DIR}/checks/rank_devices.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/progress.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/rank_env.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/receipt_file.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/replay.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/restore_detector.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/run_output.cc
  ${CMAKE_CURRENT_LIST_DIR}/output/termination_cleanup.cc
  ${CMAKE_CURRENT_LIST_DIR}/start.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_faults.cc
  ${CMAKE_CURRENT_LIST_DIR}/trainer.cc
  ${CMAKE_CURRENT_LIST_DIR}/user_signals.cc
)
target_link_libraries(dmlp_trainer_core PUBLIC
  dmlp_common dmlp_trainer_math dmlp_mlp_cpu dmlp_gemm_cpu dmlp_collectives_gloo
  dmlp_rendezvous dmlp_backend_cuda ${DMLP_YAML_TARGET})

add_executable(dmlp-train ${CMAKE_CURRENT_LIST_DIR}/main.cc)
target_link_libraries(dmlp-train PRIVATE dmlp_trainer_core CLI11::CLI11)
install(TARGETS dmlp-train RUNTIME DESTINATION bin)

# The fold is an element-wise add over megabytes per update: -O3 vectorizes it
# (lanes run across elements, so each element's additions keep shard order and
# the bits do not change; contraction stays off, top-level CMakeLists.txt).
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/math/ordered_reduce.cc
                              ${CMAKE_CURRENT_LIST_DIR}/cpu/checksummed_passes.cc PROPERTIES COMPILE_OPTIONS "-O3")
endif()
