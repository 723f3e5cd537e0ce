// defines: GlooStore
//
// Gloo's rendezvous::Store on top of our coordinator, so connectFullMesh
// exchanges its TCP addresses through COORDINATOR_ADDRESS:PORT. Debian's Gloo
// has no TCP store, and its file store would not work across hosts.
//
// Gloo calls set/get/wait and expects exceptions on failure. The waits are
// bounded by the Rendezvous's freeze-tolerant heartbeat timeout, not by the
// wall-clock timeout Gloo passes in (docs/reliability.md: waits on peers are bounded by
// HEARTBEAT_TIMEOUT_SECONDS of running time). The Status behind an exception
// is kept (error()), so callers report PEER_LOST / RENDEZVOUS_TIMEOUT rather
// than a generic Gloo failure.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "common/status.h"
#include "trainer/rendezvous/rendezvous.h"

namespace dmlp {

class GlooStore final : public gloo::rendezvous::Store {
 public:
  /// Keys are stored as `key_prefix + key`. REQUIRES: `rendezvous` outlives this store.
  GlooStore(Rendezvous& rendezvous, std::string key_prefix);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  /// `timeout` is ignored in favour of the freeze-tolerant heartbeat bound.
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

  /// The first rendezvous error that made this store throw; ok if none.
  const Status& error() const { return error_; }

 private:
  [[noreturn]] void Throw(Status status);

  Rendezvous& rendezvous_;
  std::string key_prefix_;
  Status error_;
};

}  // namespace dmlp
