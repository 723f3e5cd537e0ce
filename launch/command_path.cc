#include "launch/command_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "launch/launch_errors.h"

namespace dmlp {
namespace {

enum class Candidate { kMissing, kNotExecutable, kExecutable };

Candidate Check(const std::string& path, std::string* why) {
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) {
    *why = std::strerror(errno);
    return Candidate::kMissing;
  }
  if (S_ISDIR(info.st_mode)) {
    *why = "is a directory";
    return Candidate::kNotExecutable;
  }
  if (access(path.c_str(), X_OK) != 0) {
    *why = std::strerror(errno);
    return Candidate::kNotExecutable;
  }
  return Candidate::kExecutable;
}

}  // namespace

Result<std::string> ResolveExecutable(const std::string& command, const Environment& env) {
  std::string why;
  if (command.find('/') != std::string::npos) {
    switch (Check(command, &why)) {
      case Candidate::kExecutable: return command;
      case Candidate::kNotExecutable:
        return Status::Error(kCommandNotExecutable, command + ": " + why);
      case Candidate::kMissing: return Status::Error(kCommandNotFound, command + ": " + why);
    }
  }
  std::string path = env.Get("PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  std::string not_executable;  // first match without permission, reported if nothing better
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + command;
    Candidate found = Check(candidate, &why);
    if (found == Candidate::kExecutable) return candidate;
    if (found == Candidate::kNotExecutable && not_executable.empty())
      not_executable = candidate + ": " + why;
    start = end + 1;
  }
  if (!not_executable.empty()) return Status::Error(kCommandNotExecutable, not_executable);
  return Status::Error(kCommandNotFound, command + ": not found in PATH");
}

Result<std::string> DefaultCommand(const std::string& argv0, const Environment& env,
                                   const std::string& self_link) {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink(self_link, error);
  const std::string unreadable = error.message();
  if (error && !argv0.empty()) {
    // As the shell found us: a name without '/' came from PATH.
    Result<std::string> found = ResolveExecutable(argv0, env);
    if (found.ok()) {
      error.clear();
      self = std::filesystem::canonical(*found, error);  // realpath(3): needs no /proc
      if (error) {
        self = *found;
        error.clear();
      }
    }
  }
  if (error || self.empty())
    return Status::Error(kCommandNotFound,
                         std::string(kDefaultCommandName) + ": dmlp-launch cannot tell its own directory (" +
                             self_link + ": " + unreadable + "; argv[0] '" + argv0 +
                             "' is not found either); give the trainer as COMMAND: "
                             "dmlp-launch [options] -- /path/to/" + kDefaultCommandName);
  return (self.parent_path() / kDefaultCommandName).string();
}

}  // namespace dmlp
