# Rendezvous (coordinator + client, no Gloo) and the CPU platform's collectives
# (Gloo, and shared memory between the ranks of one host).
# Included from trainer/CMakeLists.txt.
#
# Gloo: Debian's libgloo-dev does ship /usr/share/cmake/Gloo/GlooConfig.cmake,
# but it exports a bare `gloo` target with an absolute, configuration-specific
# library path and no version check of the API we use; find_path/find_library
# on the header and library we actually need is simpler and works the same on
# Debian 12 and Ubuntu 24.04.
find_path(DMLP_GLOO_INCLUDE_DIR NAMES gloo/rendezvous/store.h gloo/alltoall.h)
find_library(DMLP_GLOO_LIBRARY NAMES gloo)
if(NOT DMLP_GLOO_INCLUDE_DIR OR NOT DMLP_GLOO_LIBRARY)
  message(FATAL_ERROR "Gloo not found (Debian/Ubuntu package libgloo-dev); "
                      "include: ${DMLP_GLOO_INCLUDE_DIR}, library: ${DMLP_GLOO_LIBRARY}")
endif()
message(STATUS "dmlp: Gloo ${DMLP_GLOO_LIBRARY}")

add_library(dmlp_rendezvous STATIC
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/last_resort.cc
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/peer_monitor.cc
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/peer_wait.cc
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/plan_difference.cc
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/rendezvous.cc
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/rendezvous_lane.cc
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/rendezvous_server.cc
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/rendezvous_server_peers.cc
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/rendezvous_wire.cc
  ${CMAKE_CURRENT_LIST_DIR}/rendezvous/silence_tracker.cc
)
target_include_directories(dmlp_rendezvous PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(dmlp_rendezvous PUBLIC dmlp_common Threads::Threads)

add_library(dmlp_collectives_gloo STATIC
  ${CMAKE_CURRENT_LIST_DIR}/collectives.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu/checksummed_passes.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu/collectives_gloo.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu/collectives_shm.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu/collectives_shm_checksums.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu/collectives_shm_reduction.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu/gloo_store.cc
  ${CMAKE_CURRENT_LIST_DIR}/cpu/slice_checksum.cc
)
# The shared memory transport's checksum loop (slice_checksum.cc) only
# vectorizes at -O3: integer arithmetic, so no bit of it depends on that.
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/cpu/slice_checksum.cc PROPERTIES COMPILE_OPTIONS "-O3")
endif()
# SYSTEM: Gloo's headers are not warning-clean under -Wall -Wextra -Werror.
target_include_directories(dmlp_collectives_gloo SYSTEM PUBLIC ${DMLP_GLOO_INCLUDE_DIR})
# The transport's side of the ordered reduction (trainer/reduction/): the
# exchange's packing (dmlp_trainer_math) and the shared segment's checked fold
# on the rank's threads (dmlp_mlp_cpu).
target_link_libraries(dmlp_collectives_gloo PUBLIC dmlp_rendezvous dmlp_trainer_math dmlp_mlp_cpu
                      ${DMLP_GLOO_LIBRARY})
