#include "verify/same_file.h"

namespace dmlp::verify {

bool SameInode(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

std::string ParentOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

bool NameTheSameFile(const std::string& a, const std::string& b) {
  struct stat a_info {}, b_info {};
  const bool a_exists = ::stat(a.c_str(), &a_info) == 0, b_exists = ::stat(b.c_str(), &b_info) == 0;
  if (a_exists || b_exists) return a_exists && b_exists && SameInode(a_info, b_info);
  // Neither exists: what would be created. The last component is compared as
  // text ("r.json" and "./r.json" end alike; "x/../r.json" resolves in its directory).
  const std::string a_name = a.substr(a.find_last_of('/') + 1), b_name = b.substr(b.find_last_of('/') + 1);
  if (a_name != b_name || a_name.empty()) return false;
  struct stat a_parent {}, b_parent {};
  return ::stat(ParentOf(a).c_str(), &a_parent) == 0 && ::stat(ParentOf(b).c_str(), &b_parent) == 0 &&
         SameInode(a_parent, b_parent);
}

}  // namespace dmlp::verify
