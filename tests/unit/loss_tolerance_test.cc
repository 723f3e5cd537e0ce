// --against GOLDEN --tolerance REL: the loss curves compared step by step
// (verify/loss_tolerance.h), through the library and the dmlp-verify binary.
#include "verify/loss_tolerance.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>

#include "tests/unit/verify_test_util.h"
#include "verify/html_report.h"
#include "verify/report_json.h"
#include "verify/report_text.h"
#include "verify/verifier.h"

namespace dmlp::verify {
namespace {

using testing::TempDir;

TEST(ToleranceTest, ParsesPlainDecimalsOnly) {
  for (const char* good : {"1e-4", "0", "0.001", "1E-6", ".5", "5.", "2", "1e+2"})
    EXPECT_TRUE(ParseTolerance(good).ok()) << good;
  EXPECT_EQ(*ParseTolerance("1e-4"), 1e-4);
  EXPECT_EQ(*ParseTolerance("0"), 0.0);
  for (const char* bad : {"", "abc", "nan", "NaN", "inf", "-inf", " 1e-4", "1e-4 ", "1e-4x", "0x1p-4", "1e", ".",
                          "+1e-4", "1,5"}) {
    Result<double> parsed = ParseTolerance(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_EQ(parsed.status().code(), "USAGE_ERROR");
  }
  EXPECT_EQ(ParseTolerance("-1e-4").status().ToString(),
            "USAGE_ERROR: --tolerance -1e-4: a relative difference cannot be negative (give a relative difference, "
            "a finite decimal number >= 0 such as 1e-4)");
  EXPECT_EQ(ParseTolerance("nan").status().ToString(),
            "USAGE_ERROR: --tolerance 'nan' is not a decimal number (give a relative difference, a finite decimal "
            "number >= 0 such as 1e-4)");
  EXPECT_EQ(ParseTolerance("1e999").status().detail().rfind("--tolerance 1e999 is not finite", 0), 0u);
}

// Was: "-0" was refused as negative.
TEST(ToleranceTest, MinusZeroIsZero) {
  for (const char* zero : {"-0", "-0.0", "-.0", "-0.", "-0e5", "-00E-3"}) {
    Result<double> parsed = ParseTolerance(zero);
    ASSERT_TRUE(parsed.ok()) << zero << ": " << parsed.status().ToString();
    EXPECT_EQ(*parsed, 0.0) << zero;
    EXPECT_FALSE(std::signbit(*parsed)) << zero;
  }
  // Below double's range but not zero: still negative.
  for (const char* negative : {"-1e-400", "-0.001", "-0e5x"}) EXPECT_FALSE(ParseTolerance(negative).ok()) << negative;
}

TEST(ToleranceTest, RelativeDifferenceIsAgainstGolden) {
  EXPECT_EQ(RelativeDifference(2.0, 2.0), 0.0);
  EXPECT_DOUBLE_EQ(RelativeDifference(2.0, 2.5), 0.25);
  EXPECT_DOUBLE_EQ(RelativeDifference(2.0, 1.5), 0.25);
  EXPECT_DOUBLE_EQ(RelativeDifference(-2.0, -1.0), 0.5);
  EXPECT_EQ(RelativeDifference(0.0, 0.0), 0.0);
  EXPECT_EQ(RelativeDifference(0.0, 1e-30), std::numeric_limits<double>::infinity());
}

TEST(ToleranceTest, StepRangesAsPeopleReadThem) {
  EXPECT_EQ(StepRangesText({}), "none");
  EXPECT_EQ(StepRangesText({{1, 50}}), "1-50");
  EXPECT_EQ(StepRangesText({{1, 3}, {5, 5}, {7, 9}}), "1-3, 5, 7-9");
}

// A complete reference-format run of `ranks` x `steps` whose loss at step s is
// loss(s) and whose digests are those of `variant` (so two runs differ in bits).
void WriteRun(const TempDir& dir, int ranks, int steps, int variant, const std::function<float(int)>& loss,
              bool finished = true) {
  testing::WriteReferenceRun(dir, ranks, steps, finished);
  std::string metrics;
  for (int step = 1; step <= steps; ++step)
    metrics += FormatReceiptLine(Receipt{step, Float32Repr(loss(step)), testing::TestHash(step, variant), std::nullopt});
  dir.Write("metrics.jsonl", metrics);
  for (int rank = 0; rank < ranks; ++rank) {
    std::string lines;
    for (int step = 1; step <= steps; ++step)
      lines += FormatReceiptLine(Receipt{step, Float32Repr(loss(step)), testing::TestHash(step, variant), rank});
    dir.Write("rank-" + std::to_string(rank) + ".jsonl", lines);
  }
  if (!finished) return;
  nlohmann::json doc = nlohmann::json::parse(dir.Read("result.json"));
  doc["final_loss"] = Float32Repr(loss(steps));
  doc["params_sha256"] = testing::TestHash(steps, variant);
  dir.Write("result.json", PyJsonDumps(doc, 2) + "\n");
}

float Golden(int step) { return 2.0f / static_cast<float>(step); }
// Drifts by 1e-6 relative per step: 5e-6 at step 5.
float Drifting(int step) { return Golden(step) * (1.0f + 1e-6f * static_cast<float>(step)); }

Report MustVerify(const std::string& run, const std::string& golden, std::optional<double> tolerance) {
  VerifyOptions options{run, golden};
  options.tolerance = tolerance;
  options.trace = true;
  Result<Report> report = Verify(options);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? std::move(report).value() : Report{};
}

TEST(ToleranceTest, WithinToleranceIsAPassThoughTheBitsDiffer) {
  TempDir golden, run;
  WriteRun(golden, 1, 5, 0, Golden);
  WriteRun(run, 2, 5, 1, Drifting);
  Report report = MustVerify(run.path(), golden.path(), 1e-4);
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(testing::FindingIds(report), (std::set<std::string>{"state.absent"}));
  EXPECT_FALSE(report.first_divergence);
  ASSERT_TRUE(report.against_verdict && report.against_verdict->losses);
  const LossComparison& losses = *report.against_verdict->losses;
  EXPECT_TRUE(losses.within());
  EXPECT_EQ(losses.compared, (std::vector<StepRange>{{1, 5}}));
  EXPECT_EQ(losses.compared_steps, 5);
  EXPECT_EQ(losses.largest_step, 5);
  EXPECT_NEAR(losses.largest, 5e-6, 1e-7);
  EXPECT_EQ(losses.golden_source, "metrics.jsonl");
  // The bitwise comparison is still reported, and decides nothing.
  EXPECT_EQ(report.against_verdict->comparison.outcome, RunComparison::Outcome::kDiverged);
  EXPECT_EQ(report.against_verdict->comparison.step, 1);
  // Without --tolerance nothing changes: the same runs differ.
  Report exact = MustVerify(run.path(), golden.path(), std::nullopt);
  EXPECT_EQ(exact.exit_code, 1);
  EXPECT_TRUE(testing::FindingIds(exact).contains("against.differs"));
  EXPECT_FALSE(exact.against_verdict->losses);
  EXPECT_TRUE(ReportToJson(exact)["against_verdict"]["tolerance"].is_null());
  EXPECT_TRUE(ReportToJson(exact)["tolerance"].is_null());
}

TEST(ToleranceTest, TheFirstStepBeyondFailsNamingTheLargest) {
  TempDir golden, run;
  WriteRun(golden, 1, 6, 0, Golden);
  WriteRun(run, 1, 6, 1, [](int step) { return step == 3 || step == 5 ? Golden(step) * 1.001f : Drifting(step); });
  Report report = MustVerify(run.path(), golden.path(), 1e-4);
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_EQ(testing::FindingIds(report), (std::set<std::string>{"state.absent", "against.loss_exceeds"}));
  const Finding& finding = report.findings.kept().back();
  EXPECT_EQ(finding.step, 3);
  EXPECT_EQ(finding.expected, Float32Repr(Golden(3)));
  EXPECT_EQ(finding.actual, Float32Repr(Golden(3) * 1.001f));
  EXPECT_NE(finding.message.find("at step 3, more than --tolerance 0.0001 (2 of 6 compared steps exceed it; largest"),
            std::string::npos)
      << finding.message;
  ASSERT_TRUE(report.first_divergence);
  EXPECT_EQ(report.first_divergence->between, "runs");
  EXPECT_EQ(report.first_divergence->step, 3);
  const LossComparison& losses = *report.against_verdict->losses;
  EXPECT_FALSE(losses.within());
  EXPECT_EQ(losses.exceeding_steps, 2);
  EXPECT_NEAR(losses.largest, 1e-3, 1e-6);

  const nlohmann::json json = ReportToJson(report);
  EXPECT_EQ(json["tolerance"], 1e-4);
  const nlohmann::json& tolerance = json["against_verdict"]["tolerance"];
  EXPECT_EQ(tolerance["within"], false);
  EXPECT_EQ(tolerance["first_exceeding_step"], 3);
  EXPECT_EQ(tolerance["exceeding_steps"], 2);
  EXPECT_EQ(tolerance["compared"], nlohmann::json::parse("[[1, 6]]"));
  EXPECT_EQ(tolerance["golden_source"], "metrics.jsonl");
  EXPECT_EQ(json["first_divergence"]["step"], 3);

  const std::string text = FormatHumanReport(report);
  EXPECT_NE(text.find("; losses beyond 0.0001 relative from step 3 (2 of 6 steps), compared at steps 1-6 (largest "),
            std::string::npos)
      << text;
  const std::string html = FormatHtmlReport(report);
  EXPECT_NE(html.find("<p id=\"tolerance\" class=\"beyond\">"), std::string::npos);
  EXPECT_NE(html.find("the loss, by more than --tolerance"), std::string::npos);
  EXPECT_NE(html.find("class=\"curve-b\""), std::string::npos) << "both curves on one chart";
}

TEST(ToleranceTest, ZeroToleranceAcceptsOnlyEqualLosses) {
  TempDir golden, run;
  WriteRun(golden, 1, 3, 0, Golden);
  WriteRun(run, 1, 3, 1, Golden);  // same losses, other digests
  EXPECT_EQ(MustVerify(run.path(), golden.path(), 0.0).exit_code, 0);
  WriteRun(run, 1, 3, 1, Drifting);
  EXPECT_EQ(MustVerify(run.path(), golden.path(), 0.0).against_verdict->losses->first_exceeding, 1);
}

TEST(ToleranceTest, OneCurveEndingFirstIsAPrefixOrIncomplete) {
  TempDir golden, finished, going;
  WriteRun(golden, 1, 6, 0, Golden);
  WriteRun(finished, 1, 4, 1, Drifting);
  Report prefix = MustVerify(finished.path(), golden.path(), 1e-4);
  EXPECT_EQ(prefix.exit_code, 1);
  EXPECT_EQ(testing::FindingIds(prefix), (std::set<std::string>{"state.absent", "against.prefix"}));
  EXPECT_NE(prefix.findings.kept().back().message.find("losses compared at steps 1-4"), std::string::npos);
  EXPECT_EQ(prefix.against_verdict->losses->golden_last, 6);
  EXPECT_EQ(prefix.against_verdict->losses->run_last, 4);
  WriteRun(going, 1, 4, 1, Drifting, /*finished=*/false);
  Report incomplete = MustVerify(going.path(), golden.path(), 1e-4);
  EXPECT_EQ(incomplete.exit_code, 3);
  EXPECT_TRUE(testing::FindingIds(incomplete).contains("against.incomplete"));
  EXPECT_TRUE(incomplete.against_verdict->losses->within());
}

// A run (or a golden) whose receipt files exist and hold no record yet: a job
// before its first step, a resume before its first. Nothing to compare is
// not a loss difference: INCOMPLETE, as it is without --tolerance.
TEST(ToleranceTest, ACurveWithoutARecordYetIsIncompleteNotAFailure) {
  TempDir golden, starting, other;
  WriteRun(golden, 2, 3, 0, Golden);
  for (const TempDir* dir : {&starting, &other})
    for (const char* name : {"metrics.jsonl", "rank-0.jsonl", "rank-1.jsonl"}) dir->Write(name, "");
  for (std::optional<double> tolerance : {std::optional<double>(1e-6), std::optional<double>()}) {
    for (const auto& [run, against] : {std::pair{&starting, &golden}, std::pair{&golden, &starting},
                                       std::pair{&starting, &other}}) {
      Report report = MustVerify(run->path(), against->path(), tolerance);
      EXPECT_EQ(report.exit_code, 3) << run->path() << " against " << against->path();
      EXPECT_FALSE(testing::FindingIds(report).contains("against.loss_exceeds"));
      if (tolerance) {
        EXPECT_TRUE(testing::FindingIds(report).contains("against.incomplete"));
      }
    }
  }
}

TEST(ToleranceTest, LossesComeFromTheRankFileWithoutMetrics) {
  TempDir golden, run;
  WriteRun(golden, 2, 3, 0, Golden);
  WriteRun(run, 2, 3, 1, Drifting);
  std::filesystem::remove(run.File("metrics.jsonl"));
  Report report = MustVerify(run.path(), golden.path(), 1e-4);
  ASSERT_TRUE(report.against_verdict && report.against_verdict->losses);
  EXPECT_EQ(report.against_verdict->losses->run_source, "rank-0.jsonl");
  EXPECT_EQ(report.against_verdict->losses->golden_source, "metrics.jsonl");
  EXPECT_TRUE(report.against_verdict->losses->within());
  EXPECT_TRUE(testing::FindingIds(report).contains("metrics.missing"));  // the run's own defect, reported as before
}

// result.json's plan or model field `key` set to `value` (the runs' experiment, experiment.h).
void SetSetting(const TempDir& dir, const std::string& section, const std::string& key, const nlohmann::json& value) {
  nlohmann::json doc = nlohmann::json::parse(dir.Read("result.json"));
  doc[section][key] = value;
  dir.Write("result.json", PyJsonDumps(doc, 2) + "\n");
}

// Was: SEED 42 against 43 within --tolerance passed, "not comparable" only an info.
TEST(ToleranceTest, AnotherExperimentFailsUnlessIntended) {
  TempDir golden, run;
  WriteRun(golden, 1, 5, 0, Golden);
  WriteRun(run, 1, 5, 1, Drifting);
  SetSetting(golden, "plan", "seed", 42);
  SetSetting(run, "plan", "seed", 43);
  Report report = MustVerify(run.path(), golden.path(), 1e-4);
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_EQ(testing::FindingIds(report), (std::set<std::string>{"state.absent", "against.other_experiment"}));
  EXPECT_TRUE(report.against_verdict->losses->within());  // the losses alone would pass
  const Finding& finding = report.findings.kept().back();
  EXPECT_EQ(finding.severity, Severity::kError);
  EXPECT_EQ(finding.message, "another experiment than " + golden.path() +
                                 ": plan.seed: 42 vs 43; whether it reproduces GOLDEN has no answer "
                                 "(--allow-different-experiment if the difference is intended)");
  // Without --tolerance the same: the receipts' difference is no longer the whole story.
  EXPECT_EQ(MustVerify(run.path(), golden.path(), std::nullopt).exit_code, 1);
  // Intended: an info, and the losses decide.
  VerifyOptions intended{run.path(), golden.path()};
  intended.tolerance = 1e-4;
  intended.allow_different_experiment = true;
  Result<Report> allowed = Verify(intended);
  ASSERT_TRUE(allowed.ok());
  EXPECT_EQ(allowed->exit_code, 0);
  EXPECT_EQ(allowed->findings.kept().back().severity, Severity::kInfo);
  intended.tolerance = 1e-7;
  EXPECT_EQ(Verify(intended)->exit_code, 1);  // a loss beyond REL still fails
  // Other sizes are another experiment too.
  SetSetting(run, "plan", "seed", 42);
  EXPECT_EQ(MustVerify(run.path(), golden.path(), 1e-4).exit_code, 0);
  SetSetting(golden, "model", "width", 16);
  SetSetting(run, "model", "width", 32);
  Report wider = MustVerify(run.path(), golden.path(), 1e-4);
  EXPECT_EQ(wider.exit_code, 1);
  EXPECT_NE(wider.findings.kept().back().message.find(": model.width: 16 vs 32;"), std::string::npos);
}

// What decides bits, not the problem, never makes another experiment: the
// reason --tolerance exists (the reference fixtures keep that too).
TEST(ToleranceTest, OtherProcessesAndPlatformsAreOneExperiment) {
  TempDir golden, run;
  WriteRun(golden, 1, 5, 0, Golden);
  WriteRun(run, 2, 5, 1, Drifting);
  for (const TempDir* dir : {&golden, &run}) SetSetting(*dir, "plan", "seed", 42);
  SetSetting(run, "plan", "platform", "cuda");
  SetSetting(run, "plan", "steps", 5);
  Report report = MustVerify(run.path(), golden.path(), 1e-4);
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_FALSE(testing::FindingIds(report).contains("against.other_experiment"));
}

using testing::Ran;
using testing::RunVerify;

TEST(ToleranceCliTest, ExitCodesAndUsageErrors) {
  TempDir golden, run, reports;
  WriteRun(golden, 1, 4, 0, Golden);
  WriteRun(run, 1, 4, 1, Drifting);
  Ran within = RunVerify({"--against", golden.path(), "--tolerance", "1e-4", run.path()});
  EXPECT_EQ(within.exit_code, 0) << within.out;
  EXPECT_NE(within.out.find("; losses within 0.0001 relative at steps 1-4 (largest "), std::string::npos) << within.out;
  Ran beyond = RunVerify({"--against", golden.path(), "--tolerance=1e-7", "--json=" + reports.File("r.json"),
                          "--html=" + reports.File("r.html"), run.path()});
  EXPECT_EQ(beyond.exit_code, 1) << beyond.out;
  EXPECT_EQ(nlohmann::json::parse(reports.Read("r.json"))["against_verdict"]["tolerance"]["first_exceeding_step"], 1);
  EXPECT_NE(reports.Read("r.html").find("id=\"tolerance\""), std::string::npos);

  Ran alone = RunVerify({"--tolerance", "1e-4", run.path()});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("--tolerance requires --against"), std::string::npos) << alone.err;
  for (const char* bad : {"-1e-4", "nan", "abc", "inf", ""}) {
    Ran ran = RunVerify({"--against", golden.path(), "--tolerance", bad, run.path()});
    EXPECT_EQ(ran.exit_code, 2) << bad;
    EXPECT_NE(ran.err.find("--tolerance"), std::string::npos) << bad << ": " << ran.err;
    EXPECT_EQ(ran.out, "") << bad;
  }
  EXPECT_NE(RunVerify({"--against", golden.path(), "--tolerance", "-1", run.path()}).err.find("cannot be negative"),
            std::string::npos);
  Ran minus_zero = RunVerify({"--against", golden.path(), "--tolerance", "-0", run.path()});
  EXPECT_EQ(minus_zero.exit_code, 1) << minus_zero.err;  // REL 0: the drifting losses differ
  EXPECT_NE(minus_zero.out.find("more than --tolerance 0 "), std::string::npos) << minus_zero.out;

  SetSetting(golden, "plan", "seed", 42);
  SetSetting(run, "plan", "seed", 43);
  EXPECT_EQ(RunVerify({"--against", golden.path(), "--tolerance", "1e-4", run.path()}).exit_code, 1);
  EXPECT_EQ(RunVerify({"--against", golden.path(), "--tolerance", "1e-4", "--allow-different-experiment", run.path()})
                .exit_code,
            0);
  Ran unpaired = RunVerify({"--allow-different-experiment", run.path()});
  EXPECT_EQ(unpaired.exit_code, 2);
  EXPECT_NE(unpaired.err.find("--allow-different-experiment requires --against"), std::string::npos) << unpaired.err;
}

}  // namespace
}  // namespace dmlp::verify
