#include "trainer/output/replay.h"

#include <cstdio>
#include <filesystem>

#include "common/file_util.h"
#include "common/receipt_reader.h"

namespace dmlp {
namespace {

namespace fs = std::filesystem;

Status Invalid(const std::string& detail) {
  return Status::Error("RESUME_RECEIPTS_INVALID", detail);
}

/// Complete, strict receipt lines of a file in step order 1, 2, ...; a missing
/// file gives none; a torn last line (no newline) is the interrupted write.
Result<std::vector<Receipt>> ReadReceiptFile(const std::string& path, bool with_rank) {
  Result<std::string> contents = ReadFileToString(path);
  if (!contents.ok() && contents.status().code() == "NOT_FOUND") return std::vector<Receipt>{};
  if (!contents.ok()) return contents.status();
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

}  // namespace

Result<std::string> MoveReceiptsAside(const std::string& out_dir) {
  std::vector<fs::path> files;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(out_dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name == "metrics.jsonl" || (name.rfind("rank-", 0) == 0 && name.size() > 11 &&
                                    name.compare(name.size() - 6, 6, ".jsonl") == 0))
      files.push_back(entry.path());
  }
  if (error) return Status::Error("IO_ERROR", "list " + out_dir + ": " + error.message());
  if (files.empty()) return std::string();
  fs::path aside;
  for (int attempt = 1;; ++attempt) {
    aside = fs::path(out_dir) / kSupersededDir / std::to_string(attempt);
    if (!fs::exists(aside)) break;
  }
  fs::create_directories(aside, error);
  if (error) return Status::Error("IO_ERROR", "create " + aside.string() + ": " + error.message());
  for (const fs::path& file : files) {
    fs::rename(file, aside / file.filename(), error);
    if (error) return Status::Error("IO_ERROR", "move " + file.string() + ": " + error.message());
  }
  DMLP_RETURN_IF_ERROR(FsyncDirectoryOf((aside / "x").string()));
  DMLP_RETURN_IF_ERROR(FsyncDirectoryOf((fs::path(out_dir) / "x").string()));
  return aside.string();
}

Result<std::vector<Receipt>> ReadPriorReceipts(const std::string& aside_dir, int64_t rank) {
  if (aside_dir.empty()) return std::vector<Receipt>{};
  DMLP_ASSIGN_OR_RETURN(std::vector<Receipt> metrics,
                        ReadReceiptFile(aside_dir + "/metrics.jsonl", false));
  DMLP_ASSIGN_OR_RETURN(std::vector<Receipt> own,
                        ReadReceiptFile(aside_dir + "/rank-" + std::to_string(rank) + ".jsonl", true));
  for (const Receipt& receipt : own) {
    if (receipt.rank != rank)
      return Invalid(aside_dir + "/rank-" + std::to_string(rank) + ".jsonl holds rank " +
                     std::to_string(receipt.rank.value_or(-1)));
  }
  std::vector<Receipt> prior = own.size() >= metrics.size() ? own : metrics;
  for (size_t i = 0; i < prior.size(); ++i) {
    if (i < own.size()) prior[i] = own[i];
    prior[i].rank = rank;
  }
  return prior;
}

}  // namespace dmlp
