// defines: FreePort, ConnectTo, ReadToEnd, RunRanks, RendezvousTestOptions, ManualClock
//
// Helpers for tests that run several ranks as threads on 127.0.0.1.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "trainer/rendezvous/peer_wait.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp::testing {

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel picked it).
inline int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t length = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length);
  close(fd);
  return ntohs(addr.sin_port);
}

/// A raw client socket to the coordinator on 127.0.0.1:`port`, for tests that
/// speak the protocol by hand; -1 when nothing listens.
inline int ConnectTo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  // A coordinator that never answers fails the test instead of hanging it.
  timeval patience{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof(patience));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/// Everything the coordinator says on `fd` until it closes the connection.
inline std::string ReadToEnd(int fd) {
  std::string reply;
  char chunk[4096];
  for (ssize_t got; (got = read(fd, chunk, sizeof(chunk))) > 0;) reply.append(chunk, static_cast<size_t>(got));
  return reply;
}

inline RendezvousOptions RendezvousTestOptions(int port, int rank, int world_size, int timeout_seconds = 10,
                                               std::string fingerprint = "BATCH=16\nSEED=1") {
  RendezvousOptions options;
  options.address = "127.0.0.1";
  options.port = port;
  options.rank = rank;
  options.world_size = world_size;
  options.heartbeat_timeout_seconds = timeout_seconds;
  options.plan_fingerprint = std::move(fingerprint);
  return options;
}

/// Runs body(rank) for every rank on its own thread and joins them all.
inline void RunRanks(int world_size, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) threads.emplace_back(body, rank);
  for (auto& thread : threads) thread.join();
}

/// A WaitClock that moves only when a test advances it.
class ManualClock final : public WaitClock {
 public:
  std::chrono::nanoseconds Now() override { return now_; }
  void Advance(std::chrono::nanoseconds by) { now_ += by; }

 private:
  std::chrono::nanoseconds now_{1'000'000'000};
};

}  // namespace dmlp::testing
