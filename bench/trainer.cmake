# bench/train_bench.py drives dmlp-train and the reference; cpu_floor measures the GEMM floor.
add_executable(cpu_floor ${CMAKE_CURRENT_LIST_DIR}/cpu_floor.cc)
target_include_directories(cpu_floor PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(cpu_floor PRIVATE dmlp_trainer_cpu)

# cpu_peak: the FMA roof of this machine; -O3 so the accumulators stay in registers.
add_executable(cpu_peak ${CMAKE_CURRENT_LIST_DIR}/cpu_peak.cc)
target_compile_options(cpu_peak PRIVATE -O3)
target_link_libraries(cpu_peak PRIVATE Threads::Threads)

# digest_bench: the digest pipeline's throughput against DIGEST_THREADS;
# gpu_bench --digest-sweep measures the same on a GPU host (bench/cuda.cmake).
add_library(dmlp_bench_digest STATIC ${CMAKE_CURRENT_LIST_DIR}/digest_sweep.cc)
target_include_directories(dmlp_bench_digest PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(dmlp_bench_digest PUBLIC dmlp_trainer_core)
add_executable(digest_bench ${CMAKE_CURRENT_LIST_DIR}/digest_bench.cc)
target_link_libraries(digest_bench PRIVATE dmlp_bench_digest CLI11::CLI11)

# data_bench: one update's batch and the initial parameters on one CPU thread (budget: 3 %).
add_executable(data_bench ${CMAKE_CURRENT_LIST_DIR}/data_bench.cc)
target_link_libraries(data_bench PRIVATE dmlp_trainer_math)

# adam_bench: one optimizer update on the rank's threads against a plain loop over the same bytes.
add_executable(adam_bench ${CMAKE_CURRENT_LIST_DIR}/adam_bench.cc)
target_link_libraries(adam_bench PRIVATE dmlp_trainer_cpu)
# -O3: the baseline loop vectorizes as Adam's does (trainer/cpu/CMakeLists.txt), so it is a floor.
set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/adam_bench.cc PROPERTIES COMPILE_OPTIONS "-O3")

# transport_bench: the ordered reduction's exchange between rank processes, Gloo TCP against shared memory.
add_executable(transport_bench ${CMAKE_CURRENT_LIST_DIR}/transport_bench.cc)
target_include_directories(transport_bench PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(transport_bench PRIVATE dmlp_trainer_cpu dmlp_trainer_core CLI11::CLI11)
