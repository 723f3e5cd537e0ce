// Where each rank ran: rank-N.env.jsonl as dmlp-verify reads, reports and
// compares it (verify/rank_env_check.h, verify/comparability.h).
#include "verify/rank_env_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "verify/comparability.h"
#include "verify/report_json.h"
#include "verify/report_text.h"
#include "verify/verifier.h"
#include "verify_test_util.h"

namespace dmlp::verify {
namespace {

using testing::TempDir;
using json = nlohmann::json;

json Line(int rank, const std::string& event, int after_step, const std::string& gpu = "NVIDIA L4",
          const std::string& blas = "skx") {
  json line = {{"rank", rank}, {"event", event}, {"after_step", after_step}, {"time", "2026-12-01T11:00:00Z"},
               {"host", "h" + std::to_string(rank)}, {"boot_id", "b1"}, {"pid", 100 + rank},
               {"device", {{"kind", "cuda"}, {"name", gpu}, {"uuid", "GPU-" + std::to_string(rank)},
                           {"pci_bus_id", "0000:0" + std::to_string(rank) + ":00.0"}, {"driver", "12.8"}}},
               {"stack", {{"platform", "cuda"}, {"blas", {{"kernel", blas}, {"threads", 1}}},
                          {"collectives", "nccl 2.25.1"}}},
               {"build", {{"version", "0.1.0"}, {"git_commit", std::string(40, 'a')}, {"git_dirty", "false"}}}};
  if (event == "restored") line["why"] = "boot id changed (b0 -> b1)";
  return line;
}

void WriteEnv(const TempDir& dir, int rank, const std::vector<json>& lines) {
  std::string text;
  for (const json& line : lines) text += line.dump() + "\n";
  dir.Write("rank-" + std::to_string(rank) + ".env.jsonl", text);
}

Report MustVerify(const std::string& run, std::optional<std::string> against = std::nullopt) {
  Result<Report> report = Verify(VerifyOptions{run, std::move(against), true});
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? std::move(*report) : Report{};
}

std::vector<std::string> Messages(const Report& report, const std::string& id) {
  std::vector<std::string> messages;
  for (const Finding& finding : report.findings.kept())
    if (finding.id == id) messages.push_back(finding.message);
  return messages;
}

TEST(VerifyEnvTest, EnvFilesAreShownPerRankAndAreNotReceiptFiles) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 3);
  WriteEnv(dir, 0, {Line(0, "start", 0)});
  WriteEnv(dir, 1, {Line(1, "start", 0), Line(1, "restored", 2)});
  Report report = MustVerify(dir.path());
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(report.findings.Count("ranks.bad_file_name"), 0u);
  EXPECT_EQ(report.findings.total(), report.findings.Count("state.absent"));
  ASSERT_EQ(report.run.environments.size(), 2u);
  EXPECT_EQ(DescribeEnvironment(report.run.environments[1]),
            "host h1, cuda NVIDIA L4 GPU-1 (0000:01:00.0), driver 12.8; 2 (re)starts: start, restored after "
            "step 2 (boot id changed (b0 -> b1))");
  const std::string text = FormatHumanReport(report);
  EXPECT_NE(text.find("dmlp-verify:   rank 0: host h0, cuda NVIDIA L4 GPU-0 (0000:00:00.0), driver 12.8; "
                      "1 (re)start: start\n"),
            std::string::npos)
      << text;
  const json doc = ReportToJson(report);
  EXPECT_EQ(doc["environments"][1]["lines"][1]["event"], "restored");
  EXPECT_EQ(doc["environments"][1]["lines"][1]["after_step"], 2);
  EXPECT_EQ(doc["summary"]["warnings"], 0);
}

TEST(VerifyEnvTest, ARunWithoutEnvFilesHasNoEnvFinding) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 3);
  Report report = MustVerify(dir.path());
  EXPECT_TRUE(report.run.environments.empty());
  EXPECT_EQ(FormatHumanReport(report).find("rank 0:"), std::string::npos);
}

TEST(VerifyEnvTest, AStackThatChangedMidRunIsAWarningNamingRankLineAndField) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 1, 3);
  WriteEnv(dir, 0, {Line(0, "start", 0), Line(0, "restored", 2, "NVIDIA H100", "haswell")});
  Report report = MustVerify(dir.path());
  EXPECT_EQ(report.exit_code, 0);  // never a failure on its own
  EXPECT_EQ(report.verdict, Verdict::kPass);
  EXPECT_EQ(report.findings.warnings(), 1u);
  EXPECT_EQ(Messages(report, "env.stack_changed"),
            std::vector<std::string>{"rank 0 line 2 (restored after step 2): device.name: \"NVIDIA L4\" -> "
                                     "\"NVIDIA H100\"; stack.blas.kernel: \"skx\" -> \"haswell\""});
  EXPECT_NE(FormatHumanReport(report).find("warning env.stack_changed " + dir.File("rank-0.env.jsonl") + ":2: "),
            std::string::npos);
  EXPECT_NE(FormatHumanReport(report).find("0 errors, 0 incomplete, 1 warning, 1 info"), std::string::npos);
}

TEST(VerifyEnvTest, DamagedLinesAreWarningsAndSkipped) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 3);
  json other_rank = Line(0, "start", 0);
  json no_device = Line(0, "start", 0);
  no_device.erase("device");
  dir.Write("rank-0.env.jsonl", Line(0, "start", 0).dump() + "\nnot json\n" + other_rank.dump() + "\n" +
                                    no_device.dump() + "\n{\"torn\":");
  json wrong_rank = Line(0, "start", 0);
  dir.Write("rank-1.env.jsonl", wrong_rank.dump() + "\n");
  Report report = MustVerify(dir.path());
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(Messages(report, "env.damaged"),
            (std::vector<std::string>{"not one JSON object (line skipped)",
                                      "device is missing or not an object (line skipped)",
                                      "the last line has no newline (a torn write) (line skipped)",
                                      "rank 0 in the file of rank 1 (line skipped)"}));
  ASSERT_EQ(report.run.environments.size(), 2u);
  EXPECT_EQ(report.run.environments[0].records.size(), 2u);
  EXPECT_EQ(report.run.environments[0].damaged_lines, 3u);
  EXPECT_EQ(DescribeEnvironment(report.run.environments[1]), "no valid line (1 damaged)");
}

// A forged first "rank" must not hide behind a valid second one: the line is damaged.
TEST(VerifyEnvTest, ALineWithADuplicateKeyIsDamaged) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 1, 3);
  std::string forged = Line(0, "start", 0).dump();
  forged.insert(1, "\"rank\":7,");  // {"rank":7,"after_step":0,...,"rank":0,...}
  dir.Write("rank-0.env.jsonl", forged + "\n" + Line(0, "start", 0).dump() + "\n");
  Report report = MustVerify(dir.path());
  EXPECT_EQ(Messages(report, "env.damaged"),
            (std::vector<std::string>{"duplicate key \"rank\" (line skipped)"}));
  ASSERT_EQ(report.run.environments.size(), 1u);
  EXPECT_EQ(report.run.environments[0].records.size(), 1u);
  EXPECT_EQ(report.run.environments[0].damaged_lines, 1u);
}

TEST(VerifyEnvTest, RanksOnDifferentDevicesAreInformational) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 3, 2);
  WriteEnv(dir, 0, {Line(0, "start", 0)});
  WriteEnv(dir, 1, {Line(1, "start", 0, "NVIDIA H100")});
  WriteEnv(dir, 2, {Line(2, "start", 0)});
  Report report = MustVerify(dir.path());
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(Messages(report, "env.mixed_devices"),
            std::vector<std::string>{"ranks compute on different devices: cuda NVIDIA H100: rank 1; "
                                     "cuda NVIDIA L4: rank 0 2"});
}

RankEnvironment Env(int rank, const json& line) {
  RankEnvironment env;
  env.rank = rank;
  EnvRecord record;
  record.device = line["device"];
  record.stack = line["stack"];
  record.build = line["build"];
  env.records.push_back(record);
  return env;
}

TEST(VerifyEnvTest, ComparabilityPerRankWithoutResultJson) {
  const std::vector<RankEnvironment> golden = {Env(0, Line(0, "start", 0)), Env(1, Line(1, "start", 0))};
  // Another GPU of the same model, on another host: comparable; still unknown without result.json.
  Comparability same = CompareSetups(std::nullopt, std::nullopt, golden, golden);
  EXPECT_EQ(same.kind, Comparability::Kind::kUnknown);
  const std::vector<RankEnvironment> run = {Env(0, Line(0, "start", 0)),
                                            Env(1, Line(1, "start", 0, "NVIDIA H100"))};
  Comparability differs = CompareSetups(std::nullopt, std::nullopt, golden, run);
  EXPECT_EQ(differs.kind, Comparability::Kind::kNotComparable);
  EXPECT_EQ(differs.reasons,
            std::vector<std::string>{"rank 1 (env): device.name: \"NVIDIA L4\" vs \"NVIDIA H100\""});
  // Neither side has env files: unknown, as before.
  EXPECT_EQ(CompareSetups(std::nullopt, std::nullopt, {}, run).kind, Comparability::Kind::kUnknown);
}

TEST(VerifyEnvTest, ComparabilityAsSetsWhenTheRankCountsDiffer) {
  const std::vector<RankEnvironment> golden = {Env(0, Line(0, "start", 0)), Env(1, Line(1, "start", 0))};
  const std::vector<RankEnvironment> one = {Env(0, Line(0, "start", 0))};
  EXPECT_EQ(CompareSetups(std::nullopt, std::nullopt, golden, one).kind, Comparability::Kind::kUnknown);
  // (The GPU model: without result.json nothing says the runs' GEMMs were not cuBLAS's.)
  const std::vector<RankEnvironment> other = {Env(0, Line(0, "start", 0, "NVIDIA H100"))};
  Comparability differs = CompareSetups(std::nullopt, std::nullopt, golden, other);
  EXPECT_EQ(differs.kind, Comparability::Kind::kNotComparable);
  EXPECT_EQ(differs.reasons,
            (std::vector<std::string>{
                "GOLDEN rank 0 (env, no rank of the other run alike): device.name: \"NVIDIA L4\" vs \"NVIDIA H100\"",
                "GOLDEN rank 1 (env, no rank of the other run alike): device.name: \"NVIDIA L4\" vs \"NVIDIA H100\"",
                "RUN rank 0 (env, no rank of the other run alike): device.name: \"NVIDIA L4\" vs \"NVIDIA H100\""}));
}

TEST(VerifyEnvTest, AgainstUsesEveryRanksEnvFile) {
  TempDir golden, run;
  testing::WriteReferenceRun(golden, 2, 3);
  testing::WriteReferenceRun(run, 2, 2, /*with_result=*/false);  // still going
  WriteEnv(golden, 0, {Line(0, "start", 0)});
  WriteEnv(golden, 1, {Line(1, "start", 0)});
  WriteEnv(run, 0, {Line(0, "start", 0)});
  WriteEnv(run, 1, {Line(1, "start", 0, "NVIDIA H100")});
  Report report = MustVerify(run.path(), golden.path());
  ASSERT_TRUE(report.against_verdict.has_value());
  EXPECT_EQ(report.against_verdict->comparability.kind, Comparability::Kind::kNotComparable);
  EXPECT_EQ(Messages(report, "against.not_comparable"),
            std::vector<std::string>{"not comparable with " + golden.path() +
                                     ": rank 1 (env): device.name: \"NVIDIA L4\" vs \"NVIDIA H100\""});
}

}  // namespace
}  // namespace dmlp::verify
