#include "trainer/output/replay.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "common/file_util.h"
#include "common/format/error_codes.h"
#include "common/receipt_reader.h"

namespace dmlp {
namespace {

constexpr char kMetricsName[] = "metrics.jsonl";

Status Invalid(const std::string& detail) {
  return Status::Error(kResumeReceiptsInvalid, detail);
}

bool IsReceiptFileName(const std::string& name) {
  return name == kMetricsName || (name.rfind("rank-", 0) == 0 && name.size() > 11 &&
                                  name.compare(name.size() - 6, 6, ".jsonl") == 0);
}

Result<std::string> ReadAll(const OutDir& dir, const std::string& name) {
  DMLP_ASSIGN_OR_RETURN(int fd, dir.OpenForReading(name));
  return ReadFdToString(fd, dir.PathOf(name));
}

/// Complete, strict receipt lines of a file in step order 1, 2, ...; a missing
/// file gives none; a torn last line (no newline) is the interrupted write.
Result<std::vector<Receipt>> ReadReceiptFile(const OutDir& dir, const std::string& name,
                                             bool with_rank) {
  Result<std::string> contents = ReadAll(dir, name);
  if (!contents.ok() && contents.status().code() == kNotFound) return std::vector<Receipt>{};
  if (!contents.ok()) return contents.status();
  const std::string path = dir.PathOf(name);
  std::vector<Receipt> receipts;
  size_t begin = 0;
  while (true) {
    size_t end = contents->find('\n', begin);
    if (end == std::string::npos) break;
    Result<Receipt> receipt =
        ReadReceiptLine(std::string_view(*contents).substr(begin, end - begin), with_rank);
    if (!receipt.ok())
      return Invalid(path + ":" + std::to_string(receipts.size() + 1) + ": " +
                     receipt.status().ToString());
    if (receipt->step != static_cast<int64_t>(receipts.size()) + 1)
      return Invalid(path + ": step " + std::to_string(receipt->step) + " out of order");
    receipts.push_back(*receipt);
    begin = end + 1;
  }
  return receipts;
}

/// The superseded/<n> folders, oldest first; none when superseded/ is absent.
Result<std::vector<OutDir>> SupersededFolders(const OutDir& out) {
  std::vector<OutDir> folders;
  Result<OutDir> superseded = out.OpenSubdir(kSupersededDir, false);
  if (!superseded.ok() && superseded.status().code() == kNotFound) return folders;
  if (!superseded.ok()) return superseded.status();
  DMLP_ASSIGN_OR_RETURN(std::vector<std::string> names, superseded->List());
  std::vector<std::pair<long long, std::string>> numbered;
  for (const std::string& name : names) {
    if (name.empty() || name.size() > 9 ||
        !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    DMLP_ASSIGN_OR_RETURN(OutDir::Kind kind, superseded->KindOf(name));
    if (kind == OutDir::Kind::kDirectory) numbered.emplace_back(std::stoll(name), name);
  }
  std::sort(numbered.begin(), numbered.end());
  for (const auto& [number, name] : numbered) {
    DMLP_ASSIGN_OR_RETURN(OutDir folder, superseded->OpenSubdir(name, false));
    folders.push_back(std::move(folder));
  }
  return folders;
}

}  // namespace

Result<std::vector<Receipt>> ReadPriorReceipts(const OutDir& out, int64_t rank,
                                               bool include_top_level) {
  DMLP_ASSIGN_OR_RETURN(std::vector<OutDir> folders, SupersededFolders(out));
  std::vector<const OutDir*> sources;
  for (const OutDir& folder : folders) sources.push_back(&folder);
  if (include_top_level) sources.push_back(&out);
  const std::string rank_name = "rank-" + std::to_string(rank) + ".jsonl";
  std::vector<Receipt> prior;
  std::string prior_from;
  for (const OutDir* source : sources) {
    for (const std::string& name : {rank_name, std::string(kMetricsName)}) {
      const bool with_rank = name != kMetricsName;
      DMLP_ASSIGN_OR_RETURN(std::vector<Receipt> receipts, ReadReceiptFile(*source, name, with_rank));
      for (size_t i = 0; i < receipts.size(); ++i) {
        if (with_rank && receipts[i].rank != rank)
          return Invalid(source->PathOf(name) + " holds rank " +
                         std::to_string(receipts[i].rank.value_or(-1)));
        if (i < prior.size() && (receipts[i].loss != prior[i].loss ||
                                 receipts[i].params_sha256 != prior[i].params_sha256))
          return Invalid(source->PathOf(name) + ": step " + std::to_string(i + 1) +
                         " differs from " + prior_from);
      }
      if (receipts.size() > prior.size()) {
        prior = std::move(receipts);
        prior_from = source->PathOf(name);
      }
    }
  }
  for (Receipt& receipt : prior) receipt.rank = rank;
  return prior;
}

Result<std::set<int64_t>> RanksWithReceiptFiles(const OutDir& out) {
  DMLP_ASSIGN_OR_RETURN(std::vector<OutDir> folders, SupersededFolders(out));
  std::set<int64_t> ranks;
  auto collect = [&](const OutDir& source) -> Status {
    DMLP_ASSIGN_OR_RETURN(std::vector<std::string> names, source.List());
    for (const std::string& name : names) {
      if (name == kMetricsName || !IsReceiptFileName(name)) continue;
      const std::string digits = name.substr(5, name.size() - 11);
      if (!digits.empty() && digits.size() <= 9 &&
          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
        ranks.insert(std::stoll(digits));
    }
    return Status::Ok();
  };
  for (const OutDir& folder : folders) DMLP_RETURN_IF_ERROR(collect(folder));
  DMLP_RETURN_IF_ERROR(collect(out));
  return ranks;
}

Result<std::string> MoveReceiptsAside(const OutDir& out) {
  DMLP_ASSIGN_OR_RETURN(std::vector<std::string> names, out.List());
  std::vector<std::string> files;
  for (const std::string& name : names)
    if (IsReceiptFileName(name)) files.push_back(name);
  if (files.empty()) return std::string();
  DMLP_ASSIGN_OR_RETURN(OutDir superseded, out.OpenSubdir(kSupersededDir, true));
  std::string attempt;
  for (int number = 1;; ++number) {
    attempt = std::to_string(number);
    Status made = superseded.MakeSubdir(attempt, kExists);
    if (made.ok()) break;
    if (made.code() != kExists) return made;
  }
  DMLP_RETURN_IF_ERROR(superseded.Sync());
  ResumeStageReached("aside-made");
  DMLP_ASSIGN_OR_RETURN(OutDir aside, superseded.OpenSubdir(attempt, false));
  for (const std::string& file : files) {
    DMLP_RETURN_IF_ERROR(out.MoveTo(file, aside, file));
    ResumeStageReached("moved-one");
  }
  DMLP_RETURN_IF_ERROR(aside.Sync());
  DMLP_RETURN_IF_ERROR(out.Sync());
  return aside.path();
}

void ResumeStageReached(std::string_view stage) {
  const char* wanted = std::getenv("DMLP_TEST_KILL_AT_RESUME_STAGE");
  if (wanted != nullptr && stage == wanted) std::raise(SIGKILL);
}

}  // namespace dmlp
