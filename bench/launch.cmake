# launch_idle_cpu: dmlp-launch's own CPU time and wake-ups while 8 ranks sleep 10 s.
add_executable(launch_idle_cpu ${CMAKE_CURRENT_LIST_DIR}/launch_idle_cpu.cc)
target_link_libraries(launch_idle_cpu PRIVATE dmlp_launch_lib)
target_compile_definitions(launch_idle_cpu PRIVATE DMLP_LAUNCH_PATH="$<TARGET_FILE:dmlp-launch>")
add_dependencies(launch_idle_cpu dmlp-launch)
