#include "common/flock_holder.h"

#include <fstream>
#include <sstream>

namespace dmlp {

std::string FlockHolderPid(ino_t inode) {
  // "1: FLOCK  ADVISORY  WRITE <pid> <maj>:<min>:<inode> 0 EOF"
  const std::string suffix = ":" + std::to_string(inode);
  std::ifstream locks("/proc/locks");
  std::string line;
  while (std::getline(locks, line)) {
    std::istringstream fields(line);
    std::string number, kind, mode, access, pid, device;
    if (!(fields >> number >> kind >> mode >> access >> pid >> device)) continue;
    if (kind == "FLOCK" && device.size() > suffix.size() &&
        device.compare(device.size() - suffix.size(), suffix.size(), suffix) == 0)
      return pid;
  }
  return "";
}

}  // namespace dmlp
