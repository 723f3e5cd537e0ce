#include "launch/divergence_line.h"

#include <algorithm>
#include <climits>

#include "common/env.h"

namespace dmlp {
namespace {

constexpr std::string_view kBlank = " \t\r\n";

std::string_view Trim(std::string_view text) {
  size_t first = text.find_first_not_of(kBlank);
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(kBlank) + 1 - first);
}

// A rank's line may be as long as the launcher reads (1 MiB); a label is a
// host name and one device, so what goes into the summary is bounded.
constexpr size_t kMaxHostBytes = 255;    // a DNS name is at most 253
constexpr size_t kMaxDeviceBytes = 256;  // "NVIDIA L4 GPU-<uuid> PCI 0000:3B:00.0" is ~70
constexpr size_t kMaxDevicesKept = 16;

// The line is a rank's raw output and goes back to a terminal: no control
// bytes, and at most `limit` bytes of it ("..." marks a cut).
std::string Printable(std::string_view text, size_t limit) {
  std::string out(text.substr(0, limit));
  if (text.size() > limit) out += "...";
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return out;
}

// Where `key` starts a word of `text` (at the start or after a blank); npos when absent.
size_t FindKey(std::string_view text, std::string_view key) {
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    if (at == 0 || kBlank.find(text[at - 1]) != std::string_view::npos) return at;
  }
  return std::string_view::npos;
}

// The word after `key` ("7" of "step=7 rank(s)=1"); nullopt when the key is absent.
std::optional<std::string_view> Word(std::string_view text, std::string_view key) {
  size_t at = FindKey(text, key);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = text.substr(at + key.size());
  return rest.substr(0, rest.find_first_of(kBlank));
}

// "1,3" -> {1, 3}; empty when any item is not a rank, so a damaged list names no rank.
std::vector<int> ParseRanks(std::string_view text) {
  std::vector<int> ranks;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    Result<int64_t> rank = ParseInteger(text.substr(start, comma - start), 0, INT_MAX);
    if (!rank.ok()) return {};
    ranks.push_back(static_cast<int>(*rank));
    if (comma == std::string_view::npos) return ranks;
    start = comma + 1;
  }
}

// "rank 1: host h1 NVIDIA L4 ..." -> {1, "h1", "NVIDIA L4 ..."}; nullopt when it is not one.
std::optional<DeviceLabel> ParseDeviceItem(std::string_view item,
                                           const std::string& launcher_host) {
  item = Trim(item);
  constexpr std::string_view kRank = kFailureDeviceRank;
  size_t colon = item.find(':');
  if (item.substr(0, kRank.size()) != kRank || colon == std::string_view::npos) return std::nullopt;
  Result<int64_t> rank = ParseInteger(item.substr(kRank.size(), colon - kRank.size()), 0, INT_MAX);
  if (!rank.ok()) return std::nullopt;
  DeviceLabel label;
  label.rank = static_cast<int>(*rank);
  std::string_view text = Trim(item.substr(colon + 1));
  constexpr std::string_view kHost = kFailureDeviceHost;
  if (text.substr(0, kHost.size()) == kHost) {
    std::string_view rest = Trim(text.substr(kHost.size()));
    size_t end = rest.find_first_of(kBlank);
    label.host = Printable(rest.substr(0, end), kMaxHostBytes);
    label.device = Printable(end == std::string_view::npos ? "" : Trim(rest.substr(end)), kMaxDeviceBytes);
  } else {
    label.host = launcher_host;
    label.device = Printable(text, kMaxDeviceBytes);
  }
  if (label.host.empty()) label.host = launcher_host;
  return label;
}

// device(s)= runs to the end of the line; its items are separated by "; rank ".
// The first kMaxDevicesKept are kept, the others counted.
void ParseDevices(std::string_view text, const std::string& launcher_host, Divergence& divergence) {
  size_t start = 0;
  for (;;) {
    size_t next = text.find(std::string(kFailureDeviceSeparator) + kFailureDeviceRank, start);
    if (auto label = ParseDeviceItem(text.substr(start, next - start), launcher_host)) {
      if (divergence.devices.size() < kMaxDevicesKept)
        divergence.devices.push_back(std::move(*label));
      else
        ++divergence.devices_not_kept;
    }
    if (next == std::string_view::npos) return;
    start = next + std::string_view(kFailureDeviceSeparator).size();
  }
}

std::string RankList(const std::vector<int>& ranks) {
  std::string list;
  for (int rank : ranks) list += (list.empty() ? "" : ",") + std::to_string(rank);
  return list;
}

std::string OneDevice(const DeviceLabel& label) {
  return "host " + label.host + (label.device.empty() ? "" : " (" + label.device + ")");
}

}  // namespace

bool Divergence::SamePlace(const Divergence& other) const {
  if (!step || !other.step || *step != *other.step || ranks.empty()) return false;
  std::vector<int> mine = ranks, theirs = other.ranks;
  std::sort(mine.begin(), mine.end());
  std::sort(theirs.begin(), theirs.end());
  return mine == theirs;
}

bool IsHardwareFaultExit(const ExitStatus& status) {
  return status.exited() && (status.code() == kRankDivergedExit || status.code() == kShardAuditFailedExit);
}

bool MentionsHardwareFault(std::string_view line) {
  return line.find(kRankDiverged) != std::string_view::npos ||
         line.find(kShardAuditFailed) != std::string_view::npos;
}

std::optional<Divergence> ParseDivergenceLine(std::string_view line,
                                              const std::string& launcher_host) {
  Divergence divergence;
  divergence.launcher_host = launcher_host;
  size_t diverged = line.find(std::string(kRankDiverged) + ":");
  size_t audit = line.find(std::string(kShardAuditFailed) + ":");
  if (diverged == std::string_view::npos && audit == std::string_view::npos) return std::nullopt;
  divergence.code = diverged < audit ? kRankDiverged : kShardAuditFailed;
  divergence.line_read = true;
  std::string_view fields = line.substr(std::min(diverged, audit) + divergence.code.size() + 1);
  // device(s)= is last and its labels contain blanks: the other fields come before it.
  size_t devices_at = FindKey(fields, kFailureDevicesKey);
  std::string_view head = fields.substr(0, devices_at);
  if (auto step = Word(head, kFailureStepKey)) {
    Result<int64_t> value = ParseInteger(*step, 0, INT64_MAX);
    if (value.ok()) divergence.step = *value;
  }
  std::optional<std::string_view> ranks = Word(head, kFailureRanksKey);
  if (!ranks) ranks = Word(head, kFailureAuditRanksKey);
  if (ranks) divergence.ranks = ParseRanks(*ranks);
  if (devices_at != std::string_view::npos)
    ParseDevices(fields.substr(devices_at + std::string_view(kFailureDevicesKey).size()), launcher_host,
                 divergence);
  return divergence;
}

std::optional<Divergence> DivergenceOf(int failed_rank, const ExitStatus& status,
                                       const std::vector<std::string>& lines,
                                       const std::string& launcher_host) {
  if (!IsHardwareFaultExit(status)) return std::nullopt;
  std::string code = status.code() == kRankDivergedExit ? kRankDiverged : kShardAuditFailed;
  Divergence divergence;
  for (const std::string& line : lines) {
    std::optional<Divergence> parsed = ParseDivergenceLine(line, launcher_host);
    if (parsed && parsed->code == code) {
      divergence = std::move(*parsed);
      break;
    }
  }
  divergence.code = code;
  divergence.failed_rank = failed_rank;
  divergence.launcher_host = launcher_host;
  return divergence;
}

std::string DivergencePlace(const Divergence& divergence) {
  const std::vector<int>& ranks = divergence.ranks;
  std::string who =
      ranks.size() > 1
          ? "ranks " + RankList(ranks)
          : "rank " + std::to_string(ranks.empty() ? divergence.failed_rank : ranks.front());
  std::string what = divergence.code == kRankDiverged ? " diverged" : " failed the shard audit";
  if (!divergence.step) return who + what;
  return who + what + " at step " + std::to_string(*divergence.step);
}

std::string DescribeDivergence(const Divergence& divergence) {
  std::string place = DivergencePlace(divergence);
  if (!divergence.line_read) {
    std::string exit_code = std::to_string(divergence.code == kRankDiverged ? kRankDivergedExit : kShardAuditFailedExit);
    return place + " (exit code " + exit_code + "; no readable " + divergence.code + " line)";
  }
  if (!divergence.step) return place + " (" + divergence.code + "; step unreadable)";
  return place + " (" + divergence.code + ")";
}

std::string DescribeDevices(const Divergence& divergence) {
  if (divergence.devices.empty())
    return "host " + divergence.launcher_host + " (the launcher's host; no device named)";
  if (divergence.devices.size() == 1) return OneDevice(divergence.devices.front());
  std::string text;
  for (const DeviceLabel& label : divergence.devices)
    text += (text.empty() ? "" : "; ") + ("rank " + std::to_string(label.rank) + ": ") +
            OneDevice(label);
  if (divergence.devices_not_kept > 0)
    text += "; " + std::to_string(divergence.devices_not_kept) + " more";
  return text;
}

}  // namespace dmlp
