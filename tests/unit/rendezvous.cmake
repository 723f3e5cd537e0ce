# Rendezvous (dmlp_trainer_rendezvous) and the CPU collectives (dmlp_trainer_cpu: Gloo, shared memory).
# Ranks run as threads (or forked processes) on 127.0.0.1 with ports the kernel picked.
add_executable(rendezvous_test ${CMAKE_CURRENT_LIST_DIR}/rendezvous_test.cc
                               ${CMAKE_CURRENT_LIST_DIR}/rendezvous_peers_test.cc
                               ${CMAKE_CURRENT_LIST_DIR}/rendezvous_gather_test.cc
                               ${CMAKE_CURRENT_LIST_DIR}/rendezvous_lane_test.cc)
target_link_libraries(rendezvous_test PRIVATE dmlp_trainer_rendezvous GTest::gtest_main)
gtest_discover_tests(rendezvous_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)

add_executable(collectives_gloo_test ${CMAKE_CURRENT_LIST_DIR}/collectives_gloo_test.cc)
target_link_libraries(collectives_gloo_test PRIVATE dmlp_trainer_cpu GTest::gtest_main)
gtest_discover_tests(collectives_gloo_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)

add_executable(collectives_shm_test ${CMAKE_CURRENT_LIST_DIR}/collectives_shm_test.cc
                                    ${CMAKE_CURRENT_LIST_DIR}/collectives_shm_integrity_test.cc)
target_link_libraries(collectives_shm_test PRIVATE dmlp_trainer_cpu GTest::gtest_main)
gtest_discover_tests(collectives_shm_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
