#include "trainer/cpu/gloo_store.h"

#include <gloo/common/error.h>

namespace dmlp {

GlooStore::GlooStore(Rendezvous& rendezvous, std::string key_prefix)
    : rendezvous_(rendezvous), key_prefix_(std::move(key_prefix)) {}

void GlooStore::Throw(Status status) {
  if (error_.ok()) error_ = status;
  // gloo::IoException is what Gloo's own stores throw for I/O failures.
  throw gloo::IoException(status.ToString());
}

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  Status status = rendezvous_.Set(key_prefix_ + key, std::string_view(data.data(), data.size()));
  if (!status.ok()) Throw(status);
}

std::vector<char> GlooStore::get(const std::string& key) {
  Result<std::string> value = rendezvous_.Get(key_prefix_ + key);
  if (!value.ok()) Throw(value.status());
  return std::vector<char>(value->begin(), value->end());
}

void GlooStore::wait(const std::vector<std::string>& keys) {
  // Get blocks until the key is present; the value itself is fetched again by get().
  for (const std::string& key : keys) get(key);
}

void GlooStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& /*timeout*/) {
  wait(keys);
}

}  // namespace dmlp
