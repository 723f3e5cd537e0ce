#include "verify/train_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>

#include "common/errno_error.h"
#include "common/file_util.h"
#include "common/format/error_codes.h"

namespace dmlp::verify {
namespace {

// The log's last error line: what dmlp-train said when it stopped.
std::string LastErrorLine(const std::string& log_path) {
  Result<std::string> text = ReadFileToString(log_path);
  if (!text.ok()) return "";
  std::istringstream lines(*text);
  std::string line, last, error;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.find("error:") != std::string::npos) error = line;
  }
  return error.empty() ? last : error;
}

}  // namespace

std::string TrainBinary() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return (error ? std::filesystem::path("dmlp-train") : self.parent_path() / "dmlp-train").string();
}

Result<int> FreeLocalPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError(kIoError, "socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                     ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const int saved = errno;
  ::close(fd);
  if (!bound) return ErrnoError(kIoError, "bind 127.0.0.1:0", saved);
  return static_cast<int>(ntohs(address.sin_port));
}

Result<TrainOutcome> RunTrain(const std::string& binary, const std::vector<std::string>& environment,
                              const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> argv = {const_cast<char*>(binary.c_str()), nullptr};
  std::vector<char*> envp;
  for (const std::string& entry : environment) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  TrainOutcome outcome;
  if (spawned != 0) {
    outcome.how_it_ended = "not started";
    outcome.error_line = binary + ": " + std::strerror(spawned);
    return outcome;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return ErrnoError(kIoError, "wait for " + binary);
  outcome.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  outcome.how_it_ended = WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                           : "signal " + std::to_string(WTERMSIG(status));
  if (!outcome.ok) outcome.error_line = LastErrorLine(log_path);
  return outcome;
}

}  // namespace dmlp::verify
