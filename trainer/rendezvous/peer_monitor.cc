#include "trainer/rendezvous/peer_monitor.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "common/format/error_codes.h"
#include "common/thread_start.h"
#include "trainer/rendezvous/last_resort.h"
#include "trainer/rendezvous/rendezvous_wire.h"

namespace dmlp {

Status PeerLoss::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failure_;
}

void PeerLoss::Declare(const Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lost_.load()) return;
  failure_ = status;
  lost_.store(true);
  for (auto& [id, hook] : hooks_) hook();
  declared_cv_.notify_all();
}

bool PeerLoss::WaitUntilLost(std::chrono::milliseconds budget) const {
  std::unique_lock<std::mutex> lock(mu_);
  return declared_cv_.wait_for(lock, budget, [this] { return lost_.load(); });
}

int PeerLoss::AddHook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(mu_);
  if (lost_.load()) hook();
  hooks_[next_id_] = std::move(hook);
  return next_id_++;
}

void PeerLoss::RemoveHook(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  hooks_.erase(id);
}

PeerMonitor::PeerMonitor(int fd, int rank, std::string job_id, std::chrono::milliseconds heartbeat,
                         std::shared_ptr<PeerLoss> loss, WaitClock& clock)
    : fd_(fd), rank_(rank), job_id_(std::move(job_id)), heartbeat_(heartbeat), loss_(std::move(loss)),
      clock_(clock) {}

Result<std::unique_ptr<PeerMonitor>> PeerMonitor::Start(int fd, int rank, std::string job_id,
                                                        std::chrono::milliseconds heartbeat,
                                                        std::shared_ptr<PeerLoss> loss, WaitClock& clock) {
  std::unique_ptr<PeerMonitor> monitor(
      new PeerMonitor(fd, rank, std::move(job_id), heartbeat, std::move(loss), clock));
  PeerWait send_wait(heartbeat, clock);
  const Message watch{MessageType::kWatch, static_cast<uint32_t>(rank), 0, {}, {}, monitor->job_id_};
  Status status = SendAll(fd, EncodeMessage(watch), send_wait);
  if (status.ok()) status = monitor->PingOnce();
  if (!status.ok()) return status;  // the destructor closes fd
  DMLP_ASSIGN_OR_RETURN(monitor->thread_, StartThread("peer monitor of rank " + std::to_string(rank),
                                                      [raw = monitor.get()] { raw->Run(); }));
  return monitor;
}

PeerMonitor::~PeerMonitor() { Stop(); }

void PeerMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  shutdown(fd_, SHUT_RDWR);  // wakes a pending PONG wait, or Pause()'s poll
  if (thread_.joinable()) thread_.join();
  close(fd_);
}

std::chrono::milliseconds PeerMonitor::PingInterval(std::chrono::milliseconds heartbeat) {
  // Several pings per heartbeat, so one late ping is never a loss.
  return std::clamp(heartbeat / 5, std::chrono::milliseconds(20), kMaxPingInterval);
}

void PeerMonitor::Run() {
  Status status;
  while (status.ok() && Pause(status)) {
    if (status.ok()) status = PingOnce();
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_ || status.ok()) return;  // the job ended; its connections close on purpose
  loss_->Declare(status);
  // The hooks end this rank's waits, and the rank reports the loss and stops
  // this monitor. A wait inside a library can outlive them: past one more
  // heartbeat the rank is ended as its own error path would end it
  // (last_resort.h), with the first loss declared (the cause), not this
  // monitor's view of it.
  if (stop_cv_.wait_for(lock, heartbeat_, [this] { return stopping_; })) return;
  lock.unlock();
  EndRankAfterLoss(loss_->failure(), rank_, heartbeat_);
}

Status PeerMonitor::PingOnce() {
  // The coordinator may take the whole heartbeat of *our* running time to
  // answer; a freeze of this process does not count (PeerWait).
  PeerWait wait(heartbeat_, clock_);
  Status sent = SendAll(fd_, EncodeMessage(Message{MessageType::kPing}), wait);
  return Interpret(sent.ok() ? ReceiveMessage(fd_, wait, FrameLimits{}) : Result<Message>(sent));
}

Status PeerMonitor::Interpret(const Result<Message>& reply) const {
  if (reply.ok() && reply->type == MessageType::kPong) return Status::Ok();
  if (reply.ok() && reply->type == MessageType::kError) return Status::Error(reply->name, reply->payload);
  const std::string seen_by = " (seen by rank " + std::to_string(rank_) + ")";
  if (reply.ok()) return Status::Error(kProtocolError, "unexpected reply to PING" + seen_by);
  if (reply.status().code() == kRendezvousTimeout) {
    return Status::Error(kPeerLost, "rank 0: silent for " + std::to_string(heartbeat_.count() / 1000) +
                                          "s (HEARTBEAT_TIMEOUT_SECONDS)" + seen_by);
  }
  if (reply.status().code() == kConnectionClosed) {
    return Status::Error(kPeerLost, "rank 0: the coordinator closed the connection" + seen_by);
  }
  return reply.status().WithContext("rank " + std::to_string(rank_) + ": liveness ping");
}

bool PeerMonitor::Pause(Status& heard) {
  const auto deadline = std::chrono::steady_clock::now() + PingInterval(heartbeat_);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return false;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return true;
    // Stop() shuts the socket down, which wakes this poll.
    pollfd readable{fd_, POLLIN, 0};
    const int ready = poll(&readable, 1, static_cast<int>(left.count()) + 1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return false;
    }
    if (ready > 0) {
      PeerWait wait(heartbeat_, clock_);
      heard = Interpret(ReceiveMessage(fd_, wait, FrameLimits{}));
      // Nothing is sent unasked but a failure; a PONG here breaks the protocol.
      if (heard.ok()) heard = Status::Error(kProtocolError, "PONG without a PING (seen by rank " +
                                                                  std::to_string(rank_) + ")");
      return true;
    }
  }
}

}  // namespace dmlp
