#include "verify/replay_run.h"

#include <stdlib.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/bit_settings.h"
#include "common/file_util.h"
#include "common/format/error_codes.h"
#include "common/format/result_json.h"
#include "common/receipt.h"
#include "verify/result_fields.h"

namespace dmlp::verify {
namespace {

namespace fs = std::filesystem;

// A row's name is a variable dmlp-train reads ("SEED"), not a description ("data definition").
bool IsVariableName(std::string_view name) {
  for (char c : name)
    if (!std::isupper(static_cast<unsigned char>(c)) && c != '_') return false;
  return !name.empty();
}

// The replay's own choices: one rank, here, on the CPU.
constexpr const char* kReplayOwned[] = {"STEPS", "OUT_DIR", "PLATFORM", "NUM_PROCESSES", "PROCESS_ID",
                                        "COORDINATOR_PORT", "RESUME", "HEARTBEAT_TIMEOUT_SECONDS"};

bool OwnedByReplay(std::string_view name) {
  for (const char* owned : kReplayOwned)
    if (name == owned) return true;
  return false;
}

// A result.json value as the variable's text: strings as they are, numbers as
// JSON writes them (the shortest text that reads back to the same double).
std::string SettingText(const nlohmann::json& value) {
  return value.is_string() ? value.get<std::string>() : value.dump();
}

// Whether the run's REDUCTION is allreduce, under which more rows decide the bits (bit_settings.h).
bool Allreduce(const ResultDoc& run) {
  const nlohmann::json* reduction = ResultField(run, "plan.reduction");
  return reduction != nullptr && *reduction == "allreduce";
}

// A cuBLAS run's bits also depend on the GPU and the library (Bits::kWithCublas).
bool Cublas(const ResultDoc& run) {
  const nlohmann::json* gemm = ResultField(run, "plan.gemm");
  return gemm != nullptr && *gemm == "cublas";
}

Result<ResultDoc> ReadResultDoc(const std::string& path) {
  DMLP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  ResultParse parse = ParseResultJson(text);
  if (!parse.doc) return Status::Error(kIoError, path + ": " + parse.problem);
  return *parse.doc;
}

Result<TrainOutcome> RunSteps(const std::vector<std::string>& environment, int64_t steps, bool resume,
                              const std::string& dir) {
  // The port was free when FreeLocalPort looked; another process may take it
  // before dmlp-train binds it, which is worth a few more tries, not a verdict.
  constexpr int kPortTries = 3;
  Result<TrainOutcome> outcome = Status::Error(kInternal, "not run");
  for (int attempt = 0; attempt < kPortTries; ++attempt) {
    std::vector<std::string> job = environment;
    DMLP_ASSIGN_OR_RETURN(int port, FreeLocalPort());
    job.push_back("STEPS=" + std::to_string(steps));
    job.push_back("OUT_DIR=" + dir);
    job.push_back("COORDINATOR_PORT=" + std::to_string(port));
    if (resume) job.push_back("RESUME=1");
    outcome = RunTrain(TrainBinary(), job, dir + ".log");
    if (!outcome.ok() || outcome->error_line.find(kCoordinatorPortInUse) == std::string::npos) break;
  }
  return outcome;
}

}  // namespace

Result<std::map<int64_t, RecordedStep>> ReadRecordedSteps(const std::string& path) {
  DMLP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::map<int64_t, RecordedStep> steps;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (!record.is_object() || !record.contains(kReceiptStep) || !record[kReceiptStep].is_number_integer() ||
        !record.contains(kReceiptLoss) || !record.contains(kReceiptParamsSha256))
      continue;
    steps[record[kReceiptStep].get<int64_t>()] =
        RecordedStep{SettingText(record[kReceiptLoss]), SettingText(record[kReceiptParamsSha256]), line + "\n"};
  }
  return steps;
}

Result<ReplayWorkspace> ReplayWorkspace::Create() {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/dmlp-replay-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return Status::Error(kIoError, "mkdtemp " + pattern);
  return ReplayWorkspace(pattern);
}

ReplayWorkspace::~ReplayWorkspace() {
  std::error_code ignored;
  if (!path_.empty()) fs::remove_all(path_, ignored);
}

std::vector<std::string> ReplayEnvironment(const ResultDoc& run) {
  std::vector<std::string> environment = {"PLATFORM=cpu", "NUM_PROCESSES=1", "PROCESS_ID=0",
                                          "HEARTBEAT_TIMEOUT_SECONDS=60"};
  for (const char* kept : {"PATH", "TMPDIR", "HOME", "DMLP_CPU_THREADS"})
    if (const char* value = std::getenv(kept)) environment.push_back(std::string(kept) + "=" + value);
  const bool allreduce = Allreduce(run), cublas = Cublas(run);
  for (const SettingRow& row : kSettings) {
    if (!DecidesBits(row.bits, allreduce, cublas) || !IsVariableName(row.name) || OwnedByReplay(row.name)) continue;
    const std::string_view fields = row.result_fields;
    const nlohmann::json* value = ResultField(run, fields.substr(0, fields.find(' ')));
    if (value != nullptr && !value->is_object()) environment.push_back(std::string(row.name) + "=" + SettingText(*value));
  }
  return environment;
}

Result<std::string> ProbeBits(const ResultDoc& run, const std::vector<std::string>& environment,
                              const std::string& dir) {
  DMLP_ASSIGN_OR_RETURN(TrainOutcome probe, RunSteps(environment, 1, false, dir));
  if (!probe.ok)
    return "dmlp-train cannot run the plan here (" + probe.how_it_ended + "): " + probe.error_line;
  DMLP_ASSIGN_OR_RETURN(ResultDoc here, ReadResultDoc(dir + "/" + kResultFile));
  const bool allreduce = Allreduce(run), cublas = Cublas(run);
  const std::vector<std::string> differences = ResultFieldDifferences(
      run, here,
      ResultFieldsOf([allreduce, cublas](const SettingRow& row) { return DecidesBits(row.bits, allreduce, cublas); }),
      true);
  std::string why;
  for (const std::string& difference : differences) why += (why.empty() ? "" : "; ") + difference;
  if (why.empty()) return why;
  return "the run's bits come from settings a replay here does not give (the run's vs this machine's: " + why + ")";
}

Result<SegmentRun> ReplaySegmentRun(const ReplaySegment& segment, const std::vector<std::string>& environment,
                                    const std::string& checkpoint,
                                    const std::map<int64_t, RecordedStep>& recorded, const std::string& dir) {
  if (segment.from > 0) {
    // What a resume needs: the checkpoint, and receipts up to its step to agree with it.
    std::error_code error;
    fs::create_directory(dir, error);
    if (!error) fs::copy_file(checkpoint, dir + "/" + fs::path(checkpoint).filename().string(), error);
    if (error) return Status::Error(kIoError, "copy " + checkpoint + " into " + dir + ": " + error.message());
    std::ofstream prior(dir + "/rank-0.jsonl", std::ios::binary);
    for (auto it = recorded.begin(); it != recorded.end() && it->first <= segment.from; ++it) prior << it->second.line;
    if (!prior.flush()) return Status::Error(kIoError, "write " + dir + "/rank-0.jsonl");
  }
  SegmentRun run;
  DMLP_ASSIGN_OR_RETURN(run.train, RunSteps(environment, segment.to, segment.from > 0, dir));
  Result<std::map<int64_t, RecordedStep>> receipts = ReadRecordedSteps(dir + "/rank-0.jsonl");
  if (receipts.ok()) run.receipts = std::move(*receipts);
  if (run.train.ok) {
    DMLP_ASSIGN_OR_RETURN(ResultDoc result, ReadResultDoc(dir + "/" + kResultFile));
    run.result = std::move(result);
  }
  return run;
}

}  // namespace dmlp::verify
