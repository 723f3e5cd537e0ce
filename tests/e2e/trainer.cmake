# End-to-end tests of the CPU job: the real dmlp-launch, dmlp-train and dmlp-verify.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
foreach(test_case test_cpu_job.CompleteRuns test_cpu_job.Determinism test_cpu_job.Failures
                  test_resume.KillAndResume test_resume.RestartsAndDisks
                  test_out_dir_safety.SymlinkedNames test_out_dir_safety.TransactionalResume
                  test_out_dir_safety.RefusedStarts
                  test_peers.JobIdentity test_peers.Strangers test_peers.Liveness
                  test_limits.PlanTooLarge test_limits.CgroupLimit test_limits.CpuThreads
                  test_rewrite_check.RewriteCheck test_rank_env.RankEnv
                  test_divergence.Divergence test_divergence.DivergedResume
                  test_shard_audit.ShardAudit test_config_file.ConfigFile
                  test_limits.DescriptorLimit test_limits.ThreadLimit test_rank_streams.Streams
                  test_resume.ResumeSettings test_log_dir.LogDir test_usage_errors.UsageErrors
                  test_user_signals.UserSignals test_out_dir_safety.DanglingLink
                  test_live_verify.LiveVerify test_replay_audit.ReplayAudit
                  test_replay_audit.CheckpointKeep)
  string(REPLACE "test_" "" test_name ${test_case})
  add_test(NAME e2e.trainer.${test_name}
           COMMAND ${Python3_EXECUTABLE} -m unittest -v ${test_case}
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/trainer)
  set_tests_properties(e2e.trainer.${test_name} PROPERTIES
    ENVIRONMENT "DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;PYTHONDONTWRITEBYTECODE=1"
    TIMEOUT 600)
endforeach()

# The same bits on CPUs this machine is not (test_other_cpus.py): dmlp-train
# under QEMU's user mode as an AVX2-only and a baseline x86-64. Exits 77 (SKIP)
# without qemu-x86_64, but fails in CI (CI set), which installs qemu-user.
add_test(NAME e2e.trainer.other_cpus
         COMMAND ${Python3_EXECUTABLE} test_other_cpus.py
         WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/trainer)
set_tests_properties(e2e.trainer.other_cpus PROPERTIES
  ENVIRONMENT "DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;PYTHONDONTWRITEBYTECODE=1"
  SKIP_RETURN_CODE 77
  TIMEOUT 600)
