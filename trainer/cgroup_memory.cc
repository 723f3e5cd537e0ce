#include "trainer/cgroup_memory.h"

#include <sstream>
#include <string_view>
#include <vector>

#include "common/env.h"
#include "common/file_util.h"

namespace dmlp {
namespace {

// v1 writes "no limit" as the largest page-aligned signed long
// (9223372036854771712); anything this large is no limit on any machine.
constexpr uint64_t kNoLimit = uint64_t{1} << 62;

struct Hierarchy {
  bool v2 = false;
  std::string limit_file, usage_file, inactive_stat;
};
const Hierarchy kV2{true, "memory.max", "memory.current", "inactive_file"};
const Hierarchy kV1{false, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"};

std::vector<std::string> Lines(const std::string& path) {
  Result<std::string> text = ReadFileToString(path);
  std::vector<std::string> lines;
  if (!text.ok()) return lines;
  std::istringstream stream(*text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

// A file holding one decimal number and a newline; nullopt for "max", absent
// or anything else.
std::optional<uint64_t> ReadNumber(const std::string& path) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) return std::nullopt;
  std::string_view digits(*text);
  if (!digits.empty() && digits.back() == '\n') digits.remove_suffix(1);
  Result<int64_t> value = ParseInteger(digits, 0, INT64_MAX);
  if (!value.ok()) return std::nullopt;
  return static_cast<uint64_t>(*value);
}

// The value of a "name 123" line of memory.stat; 0 when absent.
uint64_t StatValue(const std::string& path, const std::string& name) {
  for (const std::string& line : Lines(path)) {
    if (line.rfind(name + " ", 0) != 0) continue;
    Result<int64_t> value = ParseInteger(std::string_view(line).substr(name.size() + 1), 0, INT64_MAX);
    return value.ok() ? static_cast<uint64_t>(*value) : 0;
  }
  return 0;
}

// mountinfo escapes a space, tab, newline and backslash in a path as \ooo.
std::string Unescape(const std::string& field) {
  std::string path;
  for (size_t i = 0; i < field.size(); ++i) {
    const std::string octal = field.substr(i + 1, 3);
    if (field[i] == '\\' && octal.size() == 3 && octal.find_first_not_of("01234567") == std::string::npos) {
      path += static_cast<char>(std::stoi(octal, nullptr, 8));
      i += 3;
    } else {
      path += field[i];
    }
  }
  return path;
}

struct Mount {
  std::string root;   // the hierarchy's directory mounted there
  std::string point;  // where it is mounted
};

// The mount of the cgroup2 hierarchy, or of the v1 hierarchy with the memory
// controller. Fields: id parent dev root point options [optional...] - type source super.
std::optional<Mount> FindMount(const std::string& root, const Hierarchy& hierarchy) {
  for (const std::string& line : Lines(root + "/proc/self/mountinfo")) {
    std::istringstream stream(line);
    std::vector<std::string> fields;
    for (std::string field; stream >> field;) fields.push_back(field);
    size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (fields.size() < 5 || dash + 3 > fields.size()) continue;
    const std::string& type = fields[dash + 1];
    const std::string options = "," + fields[dash + 3] + ",";
    const bool matches = hierarchy.v2 ? type == "cgroup2"
                                      : type == "cgroup" && options.find(",memory,") != std::string::npos;
    if (matches) return Mount{Unescape(fields[3]), Unescape(fields[4])};
  }
  return std::nullopt;
}

// This process's path in the hierarchy: "0::/path" (v2) or "N:a,memory,b:/path" (v1).
std::optional<std::string> CgroupPath(const std::string& root, const Hierarchy& hierarchy) {
  for (const std::string& line : Lines(root + "/proc/self/cgroup")) {
    const size_t first = line.find(':');
    const size_t second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
    const bool matches = hierarchy.v2 ? line.compare(0, second + 1, "0::") == 0
                                      : controllers.find(",memory,") != std::string::npos;
    if (matches) return line.substr(second + 1);
  }
  return std::nullopt;
}

// The tightest limit from this process's cgroup up to the hierarchy's mounted root.
std::optional<CgroupMemory> TightestIn(const std::string& root, const Hierarchy& hierarchy) {
  const std::optional<Mount> mount = FindMount(root, hierarchy);
  std::optional<std::string> path = CgroupPath(root, hierarchy);
  if (!mount || !path) return std::nullopt;
  // Below the mounted root: the rest of the path. Elsewhere (a path outside
  // this cgroup namespace, shown with "/..") the mount is taken for the
  // process's own cgroup, never a directory above it.
  std::string below;
  const std::string& mounted = mount->root;
  if (path->find("/..") != std::string::npos) below = "";
  else if (mounted == "/") below = *path == "/" ? "" : *path;
  else if (path->rfind(mounted, 0) == 0 && (path->size() == mounted.size() || (*path)[mounted.size()] == '/'))
    below = path->substr(mounted.size());
  std::optional<CgroupMemory> tightest;
  for (;;) {
    const std::string directory = root + mount->point + below;
    const std::optional<uint64_t> limit = ReadNumber(directory + "/" + hierarchy.limit_file);
    if (limit && *limit < kNoLimit) {
      const uint64_t usage = ReadNumber(directory + "/" + hierarchy.usage_file).value_or(0);
      const uint64_t inactive = StatValue(directory + "/memory.stat", hierarchy.inactive_stat);
      const uint64_t in_use = usage > inactive ? usage - inactive : 0;
      const uint64_t available = *limit > in_use ? *limit - in_use : 0;
      if (!tightest || available < tightest->available) {
        const std::string cgroup = (mounted == "/" ? "" : mounted) + below;
        tightest = CgroupMemory{available, *limit, in_use, cgroup.empty() ? "/" : cgroup, hierarchy.limit_file};
      }
    }
    if (below.empty()) break;
    const size_t parent = below.rfind('/');
    below.resize(parent == std::string::npos ? 0 : parent);
  }
  return tightest;
}

}  // namespace

std::optional<CgroupMemory> ReadCgroupMemory(const std::string& root) {
  const std::string prefix = root == "/" ? "" : root;
  std::optional<CgroupMemory> v2 = TightestIn(prefix, kV2);
  std::optional<CgroupMemory> v1 = TightestIn(prefix, kV1);
  if (!v1) return v2;
  if (!v2) return v1;
  return v1->available < v2->available ? v1 : v2;
}

}  // namespace dmlp
