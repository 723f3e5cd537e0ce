# verify_bench: dmlp-verify's throughput and peak memory on generated runs of
# 8 ranks x 1,200 and 8 ranks x 1,000,000 steps (about 1.2 GB, in a temporary
# directory removed afterwards). Prints figures; never a test.
add_executable(verify_bench ${CMAKE_CURRENT_LIST_DIR}/verify_bench.cc)
target_link_libraries(verify_bench PRIVATE dmlp_common)
target_compile_definitions(verify_bench PRIVATE DMLP_VERIFY_BINARY="$<TARGET_FILE:dmlp-verify>")
add_dependencies(verify_bench dmlp-verify)
