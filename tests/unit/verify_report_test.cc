// Reports (human and JSON), the catalog and its README table, and the command line.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "common/build_info.h"
#include "tests/unit/verify_test_util.h"
#include "verify/finding_catalog.h"
#include "verify/options.h"
#include "verify/report_json.h"
#include "verify/report_text.h"

namespace dmlp::verify {
namespace {

TEST(FindingCatalogTest, IdsAreUniqueAndWellFormed) {
  std::set<std::string_view> ids;
  for (const CheckInfo& check : FindingCatalog()) {
    EXPECT_TRUE(ids.insert(check.id).second) << check.id;
    size_t dot = check.id.find('.');
    ASSERT_NE(dot, std::string_view::npos) << check.id;
    EXPECT_EQ(check.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_."), std::string_view::npos) << check.id;
    EXPECT_FALSE(check.meaning.empty());
  }
  EXPECT_EQ(FindCheck("line.torn_last")->severity, Severity::kIncomplete);
  EXPECT_EQ(FindCheck("ranks.hash_divergence")->severity, Severity::kError);
  EXPECT_EQ(FindCheck("no.such"), nullptr);
}

TEST(FindingCatalogTest, ReadmeListsExactlyTheCatalog) {
  std::ifstream file(std::string(DMLP_SOURCE_DIR) + "/verify/README.md");
  std::stringstream text;
  text << file.rdbuf();
  const std::string readme = text.str();
  const std::string begin = "<!-- checks:begin -->\n", end = "<!-- checks:end -->";
  size_t from = readme.find(begin), to = readme.find(end);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  EXPECT_EQ(readme.substr(from + begin.size(), to - from - begin.size()), FormatCheckList())
      << "regenerate the table with: dmlp-verify --list-checks";
}

Report SampleReport() {
  Report report;
  report.options.run_dir = "run";
  report.run.dir = "run";
  report.findings.Add(Finding::Of("line.nul", "run/rank-\xff.jsonl", "bad \x01 byte").AtLine(3).AtStep(2));
  report.findings.Add(Finding::Of("steps.count_mismatch", "run/rank-1.jsonl", "short").Expect("6", "5"));
  report.verdict = Verdict::kFail;
  report.exit_code = 1;
  return report;
}

TEST(ReportTest, HumanReportEndsInTheVerdict) {
  std::string text = FormatHumanReport(SampleReport());
  EXPECT_TRUE(text.ends_with("\nFAIL\n")) << text;
  EXPECT_NE(text.find("error line.nul run/rank-\\xff.jsonl:3 step 2: bad \\x01 byte\n"), std::string::npos) << text;
  EXPECT_NE(text.find("incomplete steps.count_mismatch run/rank-1.jsonl: short (expected 6, got 5)"),
            std::string::npos);
}

TEST(ReportTest, JsonReportIsValidWhateverTheBytes) {
  nlohmann::json parsed = nlohmann::json::parse(DumpReport(ReportToJson(SampleReport())));
  EXPECT_EQ(parsed["schema"], "dmlp-verify/1");
  EXPECT_EQ(parsed["verdict"], "FAIL");
  EXPECT_EQ(parsed["exit_code"], 1);
  ASSERT_EQ(parsed["findings"].size(), 2u);
  EXPECT_EQ(parsed["findings"][0]["line"], 3);
  EXPECT_EQ(parsed["findings"][0]["file"], "run/rank-\xEF\xBF\xBD.jsonl");
  EXPECT_TRUE(parsed["findings"][1]["line"].is_null());
  EXPECT_EQ(parsed["findings"][1]["expected"], "6");
  EXPECT_EQ(parsed["summary"]["errors"], 1);
  EXPECT_EQ(parsed["summary"]["incompletes"], 1);
  EXPECT_TRUE(parsed["first_divergence"].is_null());

  nlohmann::json error = nlohmann::json::parse(
      DumpReport(ErrorReportToJson(VerifyOptions{"run"}, Status::Error("NOT_FOUND", "run"))));
  EXPECT_EQ(error["verdict"], "ERROR");
  EXPECT_EQ(error["exit_code"], 2);
  EXPECT_EQ(error["error"], "NOT_FOUND: run");
  EXPECT_TRUE(error["findings"].empty());
}

ParseOutcome Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "dmlp-verify");
  return ParseCommandLine(static_cast<int>(args.size()), args.data());
}

TEST(OptionsTest, JsonForms) {
  ParseOutcome plain = Parse({"run"});
  ASSERT_TRUE(plain.command);
  EXPECT_FALSE(plain.command->json_path);
  EXPECT_EQ(plain.command->verify.run_dir, "run");
  ParseOutcome to_stdout = Parse({"--json", "run"});
  ASSERT_TRUE(to_stdout.command);
  EXPECT_EQ(to_stdout.command->json_path, "-");
  EXPECT_EQ(to_stdout.command->verify.run_dir, "run");
  ParseOutcome to_file = Parse({"--allow-incomplete", "--json=/tmp/r.json", "--against", "other", "run"});
  ASSERT_TRUE(to_file.command);
  EXPECT_EQ(to_file.command->json_path, "/tmp/r.json");
  EXPECT_EQ(to_file.command->verify.against, "other");
  EXPECT_TRUE(to_file.command->verify.allow_incomplete);
}

TEST(OptionsTest, UsageErrorsExitTwoHelpAndVersionZero) {
  for (std::vector<const char*> args : {std::vector<const char*>{}, {"--bogus", "run"}, {"a", "b"}, {"--against"}}) {
    ParseOutcome outcome = Parse(args);
    EXPECT_FALSE(outcome.command);
    EXPECT_EQ(outcome.exit_code, 2);
    EXPECT_FALSE(outcome.err.empty());
  }
  ParseOutcome help = Parse({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--json[=FILE]"), std::string::npos) << help.out;
  ParseOutcome version = Parse({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, VersionText("dmlp-verify") + "\n");
  EXPECT_EQ(version.out.rfind(std::string("dmlp-verify ") + DMLP_VERSION + "\ncommit: ", 0), 0u);
  ParseOutcome list = Parse({"--list-checks"});
  ASSERT_TRUE(list.command);
  EXPECT_TRUE(list.command->list_checks);
}

TEST(OptionsTest, ReportNeverGoesIntoARunDirectory) {
  testing::TempDir dir;
  CommandLine command;
  command.verify.run_dir = dir.path();
  command.json_path = dir.File("report.json");
  EXPECT_EQ(CheckReportPlacement(command).code(), "USAGE_ERROR");
  command.json_path = dir.path() + "/./report.json";
  EXPECT_EQ(CheckReportPlacement(command).code(), "USAGE_ERROR");
  command.json_path = dir.path() + "-report.json";
  EXPECT_TRUE(CheckReportPlacement(command).ok());
  command.json_path = "-";
  EXPECT_TRUE(CheckReportPlacement(command).ok());
}

}  // namespace
}  // namespace dmlp::verify
