# dmlp across three hosts on this machine (tests/e2e/cluster/cluster_e2e.py):
# network namespaces node1..node3 on a private bridge (cluster.py), under
# dmlp-launch, Slurm (three slurmd), Open MPI (mpirun with an rsh agent), and
# a host lost mid-run four ways. Needs root, iproute2, util-linux and nftables
# (tools/install-deps.sh); exits 77 (SKIP) without them, and fails instead in
# CI (CI set), which must never skip them.
# torchrun across the hosts runs in tools/engines-check.sh only (torch is large).
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(dmlp_cluster_script ${CMAKE_CURRENT_LIST_DIR}/cluster/cluster_e2e.py)
set(dmlp_cluster_env
  "DMLP_BIN_DIR=${CMAKE_BINARY_DIR}/bin;DMLP_CLUSTER_REFERENCE=${CMAKE_BINARY_DIR}/cluster-reference;PYTHONDONTWRITEBYTECODE=1")
foreach(case reference launch slurm openmpi fault_link fault_partition fault_freeze fault_coordinator)
  add_test(NAME e2e.cluster.${case}
           COMMAND ${Python3_EXECUTABLE} ${dmlp_cluster_script} ${case}
           WORKING_DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/cluster)
  set_tests_properties(e2e.cluster.${case} PROPERTIES
    ENVIRONMENT "${dmlp_cluster_env}"
    SKIP_RETURN_CODE 77
    # One cluster at a time: every case makes and removes the same namespaces.
    RESOURCE_LOCK dmlp_cluster
    TIMEOUT 600)
  if(case STREQUAL "reference")
    set_tests_properties(e2e.cluster.${case} PROPERTIES FIXTURES_SETUP dmlp_cluster_reference)
  else()
    set_tests_properties(e2e.cluster.${case} PROPERTIES FIXTURES_REQUIRED dmlp_cluster_reference)
  endif()
endforeach()
