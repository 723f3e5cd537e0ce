#include "launch/job_id.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "common/errno_error.h"
#include "launch/launch_errors.h"

namespace dmlp {

Result<std::string> NewJobId() {
  uint8_t bytes[16];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t got = getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return ErrnoError(kInternal, "getrandom");
    filled += static_cast<size_t>(got);
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id;
  for (uint8_t byte : bytes) {
    id.push_back(kHex[byte >> 4]);
    id.push_back(kHex[byte & 0x0f]);
  }
  return id;
}

Status SetJobIdentity(Environment& env, int nnodes) {
  if (env.Get("DMLP_JOB_ID") || nnodes > 1) return Status::Ok();
  DMLP_ASSIGN_OR_RETURN(std::string id, NewJobId());
  env.Set("DMLP_JOB_ID", std::move(id));
  return Status::Ok();
}

}  // namespace dmlp
