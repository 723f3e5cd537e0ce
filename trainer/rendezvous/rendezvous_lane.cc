// Lanes: further request connections of a joined rank (Rendezvous::OpenLane).
// Part of Rendezvous (rendezvous.h); split from rendezvous.cc to keep each
// file one concern. The coordinator's side is RendezvousServer::HandleLane.
#include <algorithm>

#include "common/format/error_codes.h"
#include "trainer/rendezvous/rendezvous.h"
#include "trainer/rendezvous/rendezvous_wire.h"

namespace dmlp {

Result<std::unique_ptr<Rendezvous>> Rendezvous::OpenLane() {
  std::unique_ptr<Rendezvous> lane(new Rendezvous(options_));
  DMLP_RETURN_IF_ERROR(lane->Connect());
  const Message request{MessageType::kLane, static_cast<uint32_t>(rank()), 0, {}, {}, options_.job_id};
  Result<Message> reply = lane->Call(request, "the coordinator to open a lane");
  if (!reply.ok()) return reply.status();
  if (reply->type != MessageType::kOk) {
    return lane->Broken(Status::Error(kProtocolError, "unexpected reply to LANE"));
  }
  lane->parent_ = this;
  std::lock_guard<std::mutex> lock(lanes_mu_);
  lanes_.push_back(lane.get());
  if (abandoned_) lane->Abandon();  // abandoned while the lane was being opened
  return lane;
}

void Rendezvous::ForgetLane(Rendezvous* lane) {
  std::lock_guard<std::mutex> lock(lanes_mu_);
  std::erase(lanes_, lane);
}

}  // namespace dmlp
