// The dmlp-verify binary itself: exit codes, the exact error text users see,
// where the human and JSON reports go.
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

// Was: `--html=c/rank-1.jsonl c` replaced the receipts with the page, exit 0,
// and the next verification failed with 25 errors.
TEST(VerifyCliTest, NoReportIsWrittenIntoARunDirectory) {
  testing::TempDir run, golden, reports;
  testing::WriteReferenceRun(run, 2, 3);
  testing::WriteReferenceRun(golden, 2, 3);
  const std::string receipts = run.Read("rank-1.jsonl");
  std::filesystem::create_directory(run.File("sub"));
  std::filesystem::create_directory_symlink(run.path(), reports.File("link"));
  for (const std::string option : {"--html=", "--json="}) {
    // The same directory however it is spelled: compared by device and inode.
    for (const std::string& file : {run.File("rank-1.jsonl"), run.File("sub/r.x"), reports.File("link/r.x"),
                                    run.File("sub/../state.safetensors")}) {
      Ran ran = RunVerify({option + file, run.path()});
      EXPECT_EQ(ran.exit_code, 2) << file;
      EXPECT_EQ(ran.err, "dmlp-verify: error: USAGE_ERROR: " + option + file + " is inside the run directory " +
                             run.path() + ", which dmlp-verify never writes\n");
    }
    Ran against = RunVerify({option + golden.File("r.x"), "--against", golden.path(), run.path()});
    EXPECT_EQ(against.exit_code, 2);
    EXPECT_EQ(against.err, "dmlp-verify: error: USAGE_ERROR: " + option + golden.File("r.x") +
                               " is inside the run directory " + golden.path() + ", which dmlp-verify never writes\n");
  }
  EXPECT_EQ(run.Read("rank-1.jsonl"), receipts);
  EXPECT_FALSE(std::filesystem::exists(run.File("sub/r.x")));
  EXPECT_FALSE(std::filesystem::exists(golden.File("r.x")));
  EXPECT_EQ(RunVerify({run.path()}).exit_code, 0);
}

// Was: --json=NODE renamed a 2,683-byte file over a device node (run as root,
// --json=/dev/null would replace the system's). A stand-in node here: the
// real /dev/null is never named by a test.
TEST(VerifyCliTest, AReportNeverReplacesWhatIsNotARegularFile) {
  testing::TempDir run, reports;
  testing::WriteReferenceRun(run, 1, 2);
  ASSERT_EQ(::mkfifo(reports.File("fifo").c_str(), 0644), 0);
  std::filesystem::create_directory(reports.File("dir"));
  reports.Write("earlier.json", "{}\n");
  std::filesystem::create_symlink(reports.File("earlier.json"), reports.File("link"));
  std::vector<std::pair<std::string, std::string>> targets = {
      {"fifo", "a FIFO"}, {"dir", "a directory"}, {"link", "a symbolic link"}};
  // A character device like /dev/null where this test may make one (root).
  if (::mknod(reports.File("null").c_str(), S_IFCHR | 0666, ::makedev(1, 3)) == 0)
    targets.emplace_back("null", "a character device");
  for (const std::string option : {"--html=", "--json="}) {
    for (const auto& [name, kind] : targets) {
      Ran ran = RunVerify({option + reports.File(name), run.path()});
      EXPECT_EQ(ran.exit_code, 2) << name;
      EXPECT_EQ(ran.err, "dmlp-verify: error: USAGE_ERROR: " + option + reports.File(name) + " is " + kind +
                             ", not a report dmlp-verify wrote; it is never replaced\n");
    }
  }
  struct stat info {};
  ASSERT_EQ(::lstat(reports.File("fifo").c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode));
  ASSERT_EQ(::lstat(reports.File("link").c_str(), &info), 0);
  EXPECT_TRUE(S_ISLNK(info.st_mode));
  if (::lstat(reports.File("null").c_str(), &info) == 0) {
    EXPECT_TRUE(S_ISCHR(info.st_mode));
  }
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(reports.path()), {}), targets.size() + 1);
}

TEST(VerifyCliTest, AReportReplacesOnlyAnEarlierReport) {
  testing::TempDir run, reports;
  testing::WriteReferenceRun(run, 1, 2);
  reports.Write("notes.html", "<!DOCTYPE html>\n<p>my notes</p>\n");
  reports.Write("notes.json", "{\"schema\": \"mine\"}\n");
  for (const std::string name : {"notes.html", "notes.json"}) {
    const std::string option = name.ends_with("html") ? "--html=" : "--json=";
    Ran ran = RunVerify({option + reports.File(name), run.path()});
    EXPECT_EQ(ran.exit_code, 2);
    EXPECT_EQ(ran.err, "dmlp-verify: error: USAGE_ERROR: " + option + reports.File(name) +
                           " exists and is not a report dmlp-verify wrote; it is never replaced\n");
  }
  EXPECT_EQ(reports.Read("notes.html"), "<!DOCTYPE html>\n<p>my notes</p>\n");
  EXPECT_EQ(reports.Read("notes.json"), "{\"schema\": \"mine\"}\n");
  // Its own reports, JSON as HTML (HtmlIsWrittenForEveryVerdict...), are replaced.
  EXPECT_EQ(RunVerify({"--json=" + reports.File("r.json"), run.path()}).exit_code, 0);
  run.Write("rank-0.jsonl", testing::RankLine(1, 0));
  EXPECT_EQ(RunVerify({"--json=" + reports.File("r.json"), run.path()}).exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(reports.Read("r.json"))["verdict"], "FAIL");
}

// Was: --json=FILE wrote FILE.tmp, replacing (and then removing) a file of that name.
TEST(VerifyCliTest, TheJsonReportsTemporaryIsItsOwn) {
  testing::TempDir run, reports;
  testing::WriteReferenceRun(run, 1, 2);
  reports.Write("r.json.tmp", "the user's\n");
  Ran ran = RunVerify({"--json=" + reports.File("r.json"), run.path()});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(reports.Read("r.json.tmp"), "the user's\n");
  EXPECT_EQ(nlohmann::json::parse(reports.Read("r.json"))["verdict"], "PASS");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(reports.path()), {}), 2);
}

TEST(VerifyCliTest, AnUnwritableHtmlFileIsTroubleNamingIt) {
  testing::TempDir run;
  testing::WriteReferenceRun(run, 1, 2);
  const std::string page = run.File("no/such/r.html");
  Ran ran = RunVerify({"--html=" + page, run.path()});
  EXPECT_EQ(ran.exit_code, 2);
  EXPECT_TRUE(ran.out.ends_with("\nPASS\n")) << ran.out;
  EXPECT_EQ(ran.err, "dmlp-verify: error: IO_ERROR: open directory " + run.File("no/such") +
                         ": No such file or directory\n");
}

// An unset variable in a script gives an empty GOLDEN ("--against $GOLDEN");
// it was dropped, so nothing was compared and the run passed, also under
// --require-comparable.
TEST(VerifyCliTest, AnEmptyGoldenIsAUsageError) {
  testing::TempDir run;
  testing::WriteReferenceRun(run, 1, 2);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--against", "", run.path()},
        {"--against", "", "--tolerance", "1e-4", run.path()},
        {"--against", "", "--tolerance", "1e-4", "--require-comparable", run.path()}}) {
    Ran ran = RunVerify(args);
    EXPECT_EQ(ran.exit_code, 2);
    EXPECT_TRUE(ran.err.starts_with("--against: GOLDEN is empty; name the run directory to compare with\n"))
        << ran.err;
    EXPECT_EQ(ran.out, "");
  }
}

// Was: `--against X X` passed with a warning; one directory matches itself trivially.
TEST(VerifyCliTest, OneDirectoryTwiceIsAUsageError) {
  testing::TempDir run, links;
  testing::WriteReferenceRun(run, 1, 2);
  std::filesystem::create_directory_symlink(run.path(), links.File("link"));
  for (const std::string& golden : {run.path(), run.path() + "/.", run.path() + "/", links.File("link")}) {
    Ran ran = RunVerify({"--against", golden, "--tolerance", "1e-4", run.path()});
    EXPECT_EQ(ran.exit_code, 2) << golden;
    EXPECT_EQ(ran.err, "dmlp-verify: error: USAGE_ERROR: RUN_DIR " + run.path() + " and --against " + golden +
                           " are the same directory; compare two runs\n");
    EXPECT_EQ(ran.out, "");
  }
}

// Was: `--html ""` failed late as IO_ERROR: rename ...; `--html=F --json=F`
// wrote the page, then the JSON report over it.
TEST(VerifyCliTest, EachReportFileNeedsANameOfItsOwn) {
  testing::TempDir run, reports;
  testing::WriteReferenceRun(run, 1, 2);
  Ran empty = RunVerify({"--html", "", run.path()});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_TRUE(empty.err.starts_with("--html: FILE is empty; name the file to write the page to\n")) << empty.err;
  EXPECT_EQ(empty.out, "");
  // "--json=$OUT" with OUT unset: not the JSON report on stdout, which bare --json asks for.
  Ran json = RunVerify({"--json=", run.path()});
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_TRUE(json.err.starts_with("--json=: FILE is empty; name the file, or give --json alone for stdout\n"))
      << json.err;
  EXPECT_EQ(json.out, "");
  // The same file however it is spelled, and also when it is an earlier report.
  const std::string same = reports.File("r"), spelled = reports.path() + "/./r";
  for (int earlier = 0; earlier < 2; ++earlier) {
    Ran ran = RunVerify({"--json=" + same, "--html=" + spelled, run.path()});
    EXPECT_EQ(ran.exit_code, 2);
    EXPECT_EQ(ran.err, "dmlp-verify: error: USAGE_ERROR: --json=" + same + " and --html=" + spelled +
                           " name the same file; give each report its own\n");
    EXPECT_EQ(ran.out, "");
    if (earlier == 0) {
      EXPECT_FALSE(std::filesystem::exists(same));
    }
    ASSERT_EQ(RunVerify({"--json=" + same, run.path()}).exit_code, 0);
  }
  EXPECT_EQ(nlohmann::json::parse(reports.Read("r"))["verdict"], "PASS");
  EXPECT_EQ(RunVerify({"--json=" + same, "--html=" + reports.File("r.html"), run.path()}).exit_code, 0);
}

// --html-optional (run.sh): the page is an extra. A path refused before
// verifying, or a page that cannot be written after it, costs a warning and the
// page, never the verdict; without the flag both are trouble (exit 2).
TEST(VerifyCliTest, AnOptionalPageNeverCostsTheVerdict) {
  testing::TempDir pass, fail, reports;
  testing::WriteReferenceRun(pass, 2, 3);
  testing::WriteReferenceRun(fail, 1, 2);
  fail.Write("rank-0.jsonl", testing::RankLine(1, 0) + testing::RankLine(1, 0));
  reports.Write("notes.html", "someone's notes\n");
  const std::string stale = reports.File("notes.html"), unwritable = reports.path() + "/missing/r.html";
  for (const auto& [run, verdict] : {std::pair{&pass, 0}, std::pair{&fail, 1}}) {
    Ran refused = RunVerify({"--html=" + stale, "--html-optional", run->path()});
    EXPECT_EQ(refused.exit_code, verdict) << refused.err;
    EXPECT_EQ(refused.err, "dmlp-verify: warning: --html-optional: no report written: --html=" + stale +
                               " exists and is not a report dmlp-verify wrote; it is never replaced\n");
    EXPECT_EQ(RunVerify({"--html=" + stale, run->path()}).exit_code, 2);
    Ran failed = RunVerify({"--html=" + unwritable, "--html-optional", run->path()});
    EXPECT_EQ(failed.exit_code, verdict) << failed.err;
    EXPECT_TRUE(failed.err.starts_with("dmlp-verify: warning: --html-optional: no report written: ")) << failed.err;
    EXPECT_NE(failed.out.find(verdict == 0 ? "PASS" : "FAIL"), std::string::npos) << failed.out;
    EXPECT_EQ(RunVerify({"--html=" + unwritable, run->path()}).exit_code, 2);
  }
  EXPECT_EQ(reports.Read("notes.html"), "someone's notes\n");
  EXPECT_FALSE(std::filesystem::exists(reports.path() + "/missing"));
  Ran alone = RunVerify({"--html-optional", pass.path()});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("--html-optional requires --html"), std::string::npos) << alone.err;
  Ran written = RunVerify({"--html=" + reports.File("r.html"), "--html-optional", pass.path()});
  EXPECT_EQ(written.exit_code, 0);
  EXPECT_EQ(written.err, "");
  EXPECT_TRUE(std::filesystem::exists(reports.File("r.html")));
}

// One rule (main.cc): the exit code is the verdict once the report is written
// or nobody reads it (a reader that went away, stdout closed); a report lost on
// its way to a reader (/dev/full) is trouble. Was: EPIPE gave 2.
TEST(VerifyCliTest, TheExitCodeIsTheVerdictUnlessAReportIsLost) {
  testing::TempDir pass, fail, reports;
  testing::WriteReferenceRun(pass, 2, 3);
  testing::WriteReferenceRun(fail, 1, 2);
  fail.Write("rank-0.jsonl", testing::RankLine(1, 0) + testing::RankLine(1, 0));
  for (const auto& [run, verdict] : {std::pair{&pass, 0}, std::pair{&fail, 1}}) {
    for (testing::Stdout nobody_reads : {testing::Stdout::kReaderGone, testing::Stdout::kClosed}) {
      Ran human = RunVerify({run->path()}, nobody_reads);
      EXPECT_EQ(human.exit_code, verdict);
      EXPECT_EQ(human.err, "");
      Ran json = RunVerify({"--json", run->path()}, nobody_reads);  // JSON on stdout, the human report on stderr
      EXPECT_EQ(json.exit_code, verdict);
      EXPECT_TRUE(json.err.ends_with(verdict == 0 ? "\nPASS\n" : "\nFAIL\n")) << json.err;
      Ran file = RunVerify({"--json=" + reports.File("r.json"), run->path()}, nobody_reads);
      EXPECT_EQ(file.exit_code, verdict);
      EXPECT_EQ(nlohmann::json::parse(reports.Read("r.json"))["exit_code"], verdict);  // written all the same
    }
    const std::string lost = "dmlp-verify: error: IO_ERROR: write stdout: No space left on device\n";
    Ran human = RunVerify({run->path()}, testing::Stdout::kFull);
    EXPECT_EQ(human.exit_code, 2);
    EXPECT_EQ(human.err, lost);
    Ran json = RunVerify({"--json", run->path()}, testing::Stdout::kFull);
    EXPECT_EQ(json.exit_code, 2);
    EXPECT_TRUE(json.err.ends_with(lost)) << json.err;
  }
}

// --tolerance is read by the number grammar of every setting and flag: a hex
// float is a usage error (exit 2) naming the value, nothing is verified.
TEST(VerifyCliTest, AHexToleranceIsAUsageError) {
  testing::TempDir golden, run;
  testing::WriteReferenceRun(golden, 1, 2);
  testing::WriteReferenceRun(run, 1, 2);
  Ran hex = RunVerify({"--against", golden.path(), "--tolerance", "0x1p-10", run.path()});
  EXPECT_EQ(hex.exit_code, 2);
  EXPECT_EQ(hex.out, "");
  EXPECT_NE(hex.err.find("--tolerance '0x1p-10' is not a decimal number"), std::string::npos) << hex.err;
  EXPECT_EQ(RunVerify({"--against", golden.path(), "--tolerance", "1e-3", run.path()}).exit_code, 0);
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
