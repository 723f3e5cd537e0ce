# The shared trainer: plan/config, outputs, digest pipeline, ordered reduction.
add_executable(trainer_test
  ${CMAKE_CURRENT_LIST_DIR}/job_identity_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/plan_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/run_output_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/termination_cleanup_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/rank_env_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/ordered_reduce_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/ordered_reduction_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/checksummed_passes_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/checkpoint_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/digest_pipeline_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/cgroup_memory_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/memory_plan_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/device_layout_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/nccl_defaults_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/replay_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/receipt_file_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/divergence_check_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/shard_audit_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/shard_audit_backend_test.cc
  ${CMAKE_CURRENT_LIST_DIR}/rank_devices_test.cc
)
target_link_libraries(trainer_test PRIVATE dmlp_trainer_core dmlp_trainer_cpu GTest::gtest_main)
target_compile_definitions(trainer_test PRIVATE DMLP_TEST_DATA_DIR="${DMLP_TEST_DATA_DIR}")
gtest_discover_tests(trainer_test DISCOVERY_TIMEOUT 60)
