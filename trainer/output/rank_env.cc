#include "trainer/output/rank_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/errno_error.h"

namespace dmlp {
namespace {

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  struct tm parts {};
  ::gmtime_r(&now, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

Status WriteAt(int fd, int64_t offset, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t written = ::pwrite(fd, data.data(), data.size(), static_cast<off_t>(offset));
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) return ErrnoError("IO_ERROR", "write " + path);
    data.remove_prefix(static_cast<size_t>(written));
    offset += written;
  }
  return Status::Ok();
}

}  // namespace

std::string EnvFileName(int64_t rank) { return "rank-" + std::to_string(rank) + ".env.jsonl"; }

nlohmann::json DeviceDocument(const DeviceIdentity& device) {
  nlohmann::json document = {{"kind", device.kind},
                             {"name", device.name},
                             {"uuid", device.uuid},
                             {"pci_bus_id", device.pci_bus_id},
                             {"driver", device.driver}};
  if (device.ordinal >= 0) {
    document["ordinal"] = device.ordinal;
    document["memory_bytes"] = device.memory_bytes;
  }
  return document;
}

nlohmann::json EnvLine(int64_t rank, const std::string& event, int64_t after_step,
                       const std::string& time, const HostReading& host, int64_t pid,
                       const std::optional<std::string>& why, const RankStack& stack,
                       const nlohmann::json& build) {
  nlohmann::json line = {{"rank", rank},         {"event", event},       {"after_step", after_step},
                         {"time", time},         {"host", host.host},    {"boot_id", host.boot_id},
                         {"pid", pid},           {"device", stack.device}, {"stack", stack.stack},
                         {"build", build}};
  if (why) line["why"] = *why;
  return line;
}

Status AppendEnvLine(int fd, const std::string& path, const std::string& line) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return ErrnoError("IO_ERROR", "stat " + path);
  const int64_t end = static_cast<int64_t>(info.st_size);
  std::string text = line + "\n";
  if (end > 0) {
    char last = '\n';
    ssize_t got;
    do got = ::pread(fd, &last, 1, static_cast<off_t>(end - 1));
    while (got < 0 && errno == EINTR);
    if (got < 0) return ErrnoError("IO_ERROR", "read " + path);
    if (got == 1 && last != '\n') text.insert(text.begin(), '\n');  // close a torn line
  }
  return WriteAt(fd, end, text, path);
}

Status RankEnvRecorder::Begin(const std::string& event, int64_t after_step,
                              std::function<RankStack()> describe) {
  describe_ = std::move(describe);
  boot_id_file_ = BootIdFile();
  HostReading host = ReadHost(boot_id_file_);
  DMLP_RETURN_IF_ERROR(Write(event, after_step, host, std::nullopt));
  detector_.emplace(std::move(host));
  return Status::Ok();
}

Status RankEnvRecorder::CheckRestored(int64_t after_step) {
  if (!detector_) return Status::Ok();
  HostReading host = ReadHost(boot_id_file_);
  std::optional<std::string> why = detector_->Check(host);
  if (!why) return Status::Ok();
  return Write("restored", after_step, host, why);
}

Status RankEnvRecorder::Write(const std::string& event, int64_t after_step, const HostReading& host,
                              const std::optional<std::string>& why) {
  const nlohmann::json line = EnvLine(rank_, event, after_step, UtcNow(), host, ::getpid(), why,
                                      describe_(), build_);
  // A boot id file or host name that is not UTF-8 must not throw: replaced, not refused.
  return AppendEnvLine(fd_, path_, line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace dmlp
