// The dmlp-verify binary itself: exit codes, the exact error text users see,
// where the human and JSON reports go.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/build_info.h"
#include "tests/unit/verify_test_util.h"

namespace dmlp::verify {
namespace {

using testing::Ran;
using testing::RunVerify;

TEST(VerifyCliTest, PassGoesToStdoutEndingInTheVerdict) {
  testing::TempDir run;
  testing::WriteReferenceRun(run, 2, 3);
  Ran ran = RunVerify({run.path()});
  EXPECT_EQ(ran.exit_code, 0);
  EXPECT_TRUE(ran.out.ends_with("\nPASS\n")) << ran.out;
  EXPECT_EQ(ran.err, "");
}

TEST(VerifyCliTest, JsonAloneGoesToStdoutAndTheHumanReportToStderr) {
  testing::TempDir run;
  testing::WriteReferenceRun(run, 2, 3, /*with_result=*/false);
  Ran ran = RunVerify({"--json", run.path()});
  EXPECT_EQ(ran.exit_code, 3);
  EXPECT_TRUE(ran.err.ends_with("\nINCOMPLETE\n")) << ran.err;
  nlohmann::json report = nlohmann::json::parse(ran.out);
  EXPECT_EQ(report["verdict"], "INCOMPLETE");
  EXPECT_EQ(report["exit_code"], 3);
  Ran allowed = RunVerify({"--allow-incomplete", "--json", run.path()});
  EXPECT_EQ(allowed.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(allowed.out)["exit_code"], 0);
}

TEST(VerifyCliTest, JsonFileBesideTheHumanReport) {
  testing::TempDir run, reports;
  testing::WriteReferenceRun(run, 1, 2);
  run.Write("rank-0.jsonl", testing::RankLine(1, 0) + testing::RankLine(1, 0));
  Ran ran = RunVerify({"--json=" + reports.File("r.json"), run.path()});
  EXPECT_EQ(ran.exit_code, 1);
  EXPECT_TRUE(ran.out.ends_with("\nFAIL\n")) << ran.out;
  nlohmann::json report = nlohmann::json::parse(reports.Read("r.json"));
  EXPECT_EQ(report["verdict"], "FAIL");
  EXPECT_FALSE(std::filesystem::exists(reports.File("r.json.tmp")));
}

TEST(VerifyCliTest, TroubleIsExitTwoWithTheErrorCode) {
  testing::TempDir scratch;
  const std::string missing = scratch.File("missing");
  Ran ran = RunVerify({missing});
  EXPECT_EQ(ran.exit_code, 2);
  EXPECT_EQ(ran.err, "dmlp-verify: error: NOT_FOUND: " + missing + "\n");
  EXPECT_EQ(ran.out, "");
  Ran json = RunVerify({"--json", missing});
  EXPECT_EQ(json.exit_code, 2);
  nlohmann::json report = nlohmann::json::parse(json.out);
  EXPECT_EQ(report["verdict"], "ERROR");
  EXPECT_EQ(report["error"], "NOT_FOUND: " + missing);
  Ran unwritable = RunVerify({"--json=" + scratch.File("no/such/dir/r.json"), scratch.path()});
  EXPECT_EQ(unwritable.exit_code, 2);
  EXPECT_TRUE(unwritable.err.starts_with("dmlp-verify: error: IO_ERROR: ")) << unwritable.err;
}

TEST(VerifyCliTest, NeverWritesTheReportIntoTheRun) {
  testing::TempDir run;
  testing::WriteReferenceRun(run, 1, 2);
  Ran ran = RunVerify({"--json=" + run.File("report.json"), run.path()});
  EXPECT_EQ(ran.exit_code, 2);
  EXPECT_EQ(ran.err, "dmlp-verify: error: USAGE_ERROR: --json=" + run.File("report.json") +
                         " is inside the run directory " + run.path() + ", which dmlp-verify never writes\n");
  EXPECT_FALSE(std::filesystem::exists(run.File("report.json")));
}

TEST(VerifyCliTest, HtmlIsWrittenForEveryVerdictWithoutChangingTheExitCode) {
  testing::TempDir run, reports;
  testing::WriteReferenceRun(run, 2, 3);
  const auto before = std::distance(std::filesystem::directory_iterator(run.path()), {});
  Ran pass = RunVerify({"--html=" + reports.File("r.html"), run.path()});
  EXPECT_EQ(pass.exit_code, 0);
  EXPECT_TRUE(pass.out.ends_with("\nPASS\n")) << pass.out;
  EXPECT_NE(reports.Read("r.html").find("<h1 id=\"verdict\">PASS</h1>"), std::string::npos);
  run.Write("rank-1.jsonl", testing::RankLine(1, 1) + testing::RankLine(2, 1, 1) + testing::RankLine(3, 1, 1));
  Ran fail = RunVerify({"--html=" + reports.File("r.html"), run.path()});  // replaces the old report
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_NE(reports.Read("r.html").find("<h1 id=\"verdict\">FAIL</h1>"), std::string::npos);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(reports.path()), {}), 1);  // no temporary left
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(run.path()), {}), before);
  Ran missing = RunVerify({"--html", reports.File("e.html"), run.File("missing")});  // '=' is optional here
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(reports.Read("e.html").find("NOT_FOUND: " + run.File("missing")), std::string::npos);
}

TEST(VerifyCliTest, HtmlInsideTheRunOnlyWhereTheUserSaysSo) {
  testing::TempDir run;
  testing::WriteReferenceRun(run, 1, 2);
  Ran ran = RunVerify({"--html=" + run.File("report.html"), run.path()});
  EXPECT_EQ(ran.exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(run.File("report.html")));
  Ran again = RunVerify({run.path()});  // a file the verifier does not know is ignored
  EXPECT_EQ(again.exit_code, 0) << again.out;
}

TEST(VerifyCliTest, AnUnwritableHtmlFileIsTroubleNamingIt) {
  testing::TempDir run;
  testing::WriteReferenceRun(run, 1, 2);
  const std::string page = run.File("no/such/r.html");
  Ran ran = RunVerify({"--html=" + page, run.path()});
  EXPECT_EQ(ran.exit_code, 2);
  EXPECT_TRUE(ran.out.ends_with("\nPASS\n")) << ran.out;
  // The temporary is named by dmlp-verify's pid: "create FILE.tmp-<pid>: <errno text>".
  const std::string prefix = "dmlp-verify: error: IO_ERROR: create " + page + ".tmp-";
  const std::string suffix = ": No such file or directory\n";
  ASSERT_TRUE(ran.err.starts_with(prefix) && ran.err.ends_with(suffix)) << ran.err;
  const std::string pid = ran.err.substr(prefix.size(), ran.err.size() - prefix.size() - suffix.size());
  EXPECT_FALSE(pid.empty());
  EXPECT_EQ(pid.find_first_not_of("0123456789"), std::string::npos) << pid;
}

TEST(VerifyCliTest, UsageHelpVersion) {
  Ran none = RunVerify({});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("RUN_DIR is required"), std::string::npos) << none.err;
  EXPECT_EQ(RunVerify({"--no-such-option", "x"}).exit_code, 2);
  Ran help = RunVerify({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--against GOLDEN"), std::string::npos);
  EXPECT_NE(help.out.find("--html FILE"), std::string::npos) << help.out;
  Ran version = RunVerify({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out, VersionText("dmlp-verify") + "\n");
  EXPECT_EQ(version.out.rfind(std::string("dmlp-verify ") + DMLP_VERSION + "\ncommit: ", 0), 0u);
  Ran checks = RunVerify({"--list-checks"});
  EXPECT_EQ(checks.exit_code, 0);
  EXPECT_NE(checks.out.find("| `ranks.hash_divergence` | error |"), std::string::npos);
}

}  // namespace
}  // namespace dmlp::verify
