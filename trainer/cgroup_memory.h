// defines: CgroupMemory, ReadCgroupMemory
//
// The memory a cgroup leaves this process: what `docker --memory`, Kubernetes
// and systemd set. A plan under such a limit but within MemAvailable would be
// OOM-killed (SIGKILL, exit 137) part way through allocating, so the plan's
// memory check (memory_plan.h) compares with this too.
//
// The process's cgroup comes from /proc/self/cgroup and its directory from
// /proc/self/mountinfo (a container without a cgroup namespace mounts its own
// cgroup as the hierarchy's root). Both versions are read, since a hybrid
// host can have the memory controller on either: cgroup v2's memory.max less
// memory.current, v1's memory.limit_in_bytes less memory.usage_in_bytes, at
// the process's cgroup and every ancestor up to the mount, since each limits
// the whole subtree. In-use bytes leave out the inactive page cache
// (memory.stat inactive_file), which the kernel reclaims before it OOM-kills:
// files the job wrote earlier must not refuse its next plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dmlp {

/// The tightest memory limit among the cgroups holding this process.
struct CgroupMemory {
  uint64_t available = 0;  // limit less what is in use, at the tightest level
  uint64_t limit = 0;      // that level's limit, bytes
  uint64_t in_use = 0;     // that level's use less its inactive page cache, bytes
  std::string cgroup;      // that level's path in its hierarchy ("/docker/abc")
  std::string limit_file;  // "memory.max" (v2) or "memory.limit_in_bytes" (v1)
};

/// The limit that leaves least, or nullopt when no memory cgroup limits this
/// process. `root` prefixes every path read ("/" on a real system; a test's
/// fake tree holds proc/self/cgroup, proc/self/mountinfo and the mounts).
std::optional<CgroupMemory> ReadCgroupMemory(const std::string& root = "/");

}  // namespace dmlp
