// --html: the escaping, the bucketing that keeps pictures of long runs small,
// the trace the receipt merge keeps, the page built from the Report, and the
// atomic report file. The browser check is tests/e2e/verify/html_browser_test.py.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "verify/html_report.h"
#include "verify/html_text.h"
#include "verify/report_file.h"
#include "verify/run_trace.h"
#include "verify/svg_plot.h"
#include "verify/verifier.h"
#include "verify_test_util.h"

namespace dmlp::verify {
namespace {

using testing::MetricsLine;
using testing::RankLine;
using testing::TempDir;
using testing::WriteReferenceRun;

// The text the JSON report holds for `bytes` (nlohmann's replace handler).
std::string JsonText(const std::string& bytes) {
  std::string dumped = nlohmann::json(bytes).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return nlohmann::json::parse(dumped).get<std::string>();
}

TEST(HtmlEscapeTest, MarkupRendersAsText) {
  EXPECT_EQ(HtmlEscape("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(HtmlEscape("</svg><b>"), "&lt;/svg&gt;&lt;b&gt;");
  EXPECT_EQ(HtmlEscape("a & b \"q\" 'p'"), "a &amp; b &quot;q&quot; &#39;p&#39;");
  EXPECT_EQ(HtmlEscape("&amp;"), "&amp;amp;");
}

TEST(HtmlEscapeTest, InvalidUtf8BecomesTheReplacementCharacterAsInTheJsonReport) {
  for (const std::string& bytes : {std::string("ok\xff"), std::string("\xe2\x82" "A"), std::string("\xc0\xaf"),
                                  std::string("\xed\xa0\x80"), std::string("\xf4\x90\x80\x80"),
                                  std::string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string("\xf0\x9f\x98")}) {
    EXPECT_EQ(HtmlEscape(bytes), JsonText(bytes)) << ::testing::PrintToString(bytes);
  }
  EXPECT_EQ(HtmlEscape("\xff<"), std::string(kReplacementCharacter) + "&lt;");
}

TEST(HtmlEscapeTest, ControlCharactersAreReplacedAndLongTextIsCut) {
  EXPECT_EQ(HtmlEscape(std::string("a\0b\x1b\x7f", 5)), "a\xEF\xBF\xBD" "b\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(HtmlEscape("tab\tnewline\n"), "tab\tnewline\n");
  EXPECT_EQ(HtmlEscape("\xc2\x85"), kReplacementCharacter);  // C1 NEL
  EXPECT_EQ(HtmlEscape("abcdef", 3), "abc\xE2\x80\xA6");
  EXPECT_EQ(HtmlEscape("\xe2\x82\xac\xe2\x82\xac", 2), "\xe2\x82\xac\xE2\x80\xA6");  // never half a character
}

TEST(StepBucketsTest, AMillionStepsFoldToTheCapacityAndKeepASpike) {
  RunTrace trace;
  trace.Begin({0}, "metrics.jsonl");
  const std::vector<uint8_t> agree{kRankAgrees};
  for (int64_t step = 1; step <= 1'000'000; ++step) {
    const std::string loss = step == 654'321 ? "9.5" : std::to_string(2.0 / std::sqrt(static_cast<double>(step)));
    trace.OnStep(step, agree, loss);
  }
  EXPECT_EQ(trace.loss().cells().size(), RunTrace::kBuckets);
  EXPECT_EQ(trace.loss().width(), 512);  // 2048 buckets of 512 steps hold 10^6
  for (bool log : {false, true}) {
    StepAxis axis = StepAxis::For(1'000'000);
    axis.log = log;
    std::vector<CurveColumn> columns = CurveColumns(trace, axis, kPlotWidth);
    EXPECT_LE(columns.size(), static_cast<size_t>(kPlotWidth));
    double highest = 0;
    for (const CurveColumn& column : columns) highest = std::max(highest, column.max);
    EXPECT_EQ(highest, 9.5) << "the one-step spike survives bucketing (log axis: " << log << ")";
    EXPECT_EQ(columns.front().first_step, 1);
    EXPECT_EQ(columns.back().last_step, 1'000'000);
  }
  EXPECT_EQ(trace.gap_count(), 0);
  EXPECT_EQ(trace.last_complete_step(), 1'000'000);
}

TEST(StepBucketsTest, GapsAreRecordedAndBreakTheCurve) {
  RunTrace trace;
  trace.Begin({0, 1}, "metrics.jsonl");
  for (int64_t step : {1, 2, 3, 7, 8}) trace.OnStep(step, {kRankAgrees, kRankAgrees}, "1.5");
  trace.OnStep(9, {kRankAgrees, kRankAbsent}, std::nullopt);
  ASSERT_EQ(trace.gaps().size(), 1u);
  EXPECT_EQ(trace.gaps()[0].first, 4);
  EXPECT_EQ(trace.gaps()[0].last, 6);
  EXPECT_EQ(trace.last_complete_step(), 8);
  EXPECT_EQ(trace.last_step(), 9);
  std::vector<StateRun> runs = trace.RankRuns(1, 2);
  ASSERT_EQ(runs.size(), 4u);  // 1-3 agree, 4-6 no file has them, 7-8 agree, 9 absent
  EXPECT_EQ(runs[1].state, kRankAbsent);
  EXPECT_EQ(runs[1].first, 4);
  EXPECT_EQ(runs[1].last, 6);
  EXPECT_EQ(runs[3].state, kRankAbsent);
  EXPECT_EQ(runs[3].first, 9);
}

TEST(StepBucketsTest, TheStripCollapsesRunsOfEqualSteps) {
  RunTrace trace;
  trace.Begin({0, 1, 2}, "metrics.jsonl");
  for (int64_t step = 1; step <= 1200; ++step) {
    const uint8_t third = step >= 400 ? kRankDiffers : kRankAgrees;
    trace.OnStep(step, {kRankAgrees, kRankAgrees, third}, "1.0");
  }
  std::vector<StateRun> agreeing = trace.RankRuns(0, 1), differing = trace.RankRuns(2, 3);
  ASSERT_EQ(agreeing.size(), 1u);
  EXPECT_EQ(agreeing[0].last, 1200);
  ASSERT_EQ(differing.size(), 2u);
  EXPECT_EQ(differing[1].state, kRankDiffers);
  EXPECT_EQ(differing[1].first, 400);
  EXPECT_EQ(differing[1].last, 1200);
}

Report VerifyForHtml(const std::string& run, std::optional<std::string> against = std::nullopt) {
  VerifyOptions options;
  options.run_dir = run;
  options.against = std::move(against);
  options.trace = true;
  Result<Report> report = Verify(options);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return std::move(*report);
}

TEST(HtmlReportTest, APassingRunShowsVerdictStepsAndNoFindings) {
  TempDir dir;
  WriteReferenceRun(dir, 2, 6);
  const std::string page = FormatHtmlReport(VerifyForHtml(dir.path()));
  EXPECT_NE(page.find("<h1 id=\"verdict\">PASS</h1>"), std::string::npos);
  EXPECT_NE(page.find("<th>steps</th><td>6</td>"), std::string::npos);
  EXPECT_NE(page.find("<th>last complete step</th><td>6</td>"), std::string::npos);
  EXPECT_NE(page.find("None: every step that was compared agrees."), std::string::npos);
  EXPECT_NE(page.find("class=\"curve-a\""), std::string::npos);
  EXPECT_NE(page.find("every rank agrees with the others at every step"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
  // Self-contained: nothing that could load a resource.
  for (const char* reference : {"http:", "https:", "src=", "href", "url(", "@import", "<link"}) EXPECT_EQ(page.find(reference), std::string::npos) << reference;
}

TEST(HtmlReportTest, ADivergentRankIsMarkedInTheStripAndTheChart) {
  TempDir dir;
  WriteReferenceRun(dir, 3, 6);
  std::string rank2;
  for (int step = 1; step <= 6; ++step) rank2 += RankLine(step, 2, step >= 4 ? 1 : 0);
  dir.Write("rank-2.jsonl", rank2);
  const std::string page = FormatHtmlReport(VerifyForHtml(dir.path()));
  EXPECT_NE(page.find("<h1 id=\"verdict\">FAIL</h1>"), std::string::npos);
  EXPECT_NE(page.find("Ranks disagree first at step <b class=\"step\">4</b>, in the loss and the digest "
                      "(params_sha256); ranks with equal records: {0,1} {2}."),
            std::string::npos);
  EXPECT_NE(page.find("<li>rank 2: differs at steps 4&ndash;6</li>"), std::string::npos);
  EXPECT_NE(page.find("ranks disagree: step 4"), std::string::npos);
  EXPECT_NE(page.find("<code>ranks.hash_divergence</code>"), std::string::npos);
  EXPECT_NE(page.find("rank-2.jsonl:4"), std::string::npos);
}

TEST(HtmlReportTest, AgainstShowsBothCurvesAndWhatDiffers) {
  TempDir one, two;
  WriteReferenceRun(one, 1, 6);
  WriteReferenceRun(two, 1, 6);
  std::string metrics, rank0;
  for (int step = 1; step <= 6; ++step) {
    metrics += MetricsLine(step, step >= 5 ? 1 : 0);
    rank0 += RankLine(step, 0, step >= 5 ? 1 : 0);
  }
  two.Write("metrics.jsonl", metrics);
  two.Write("rank-0.jsonl", rank0);
  const std::string page = FormatHtmlReport(VerifyForHtml(one.path(), two.path()));
  EXPECT_NE(page.find("The two runs part at step <b class=\"step\">5</b>: they differ in the loss and the digest"),
            std::string::npos);
  EXPECT_NE(page.find("class=\"curve-b\""), std::string::npos);
  EXPECT_NE(page.find("runs part: step 5 (both)"), std::string::npos);
}

TEST(HtmlReportTest, ADivergenceInsideOtherRunSaysWhichRun) {
  TempDir one, two;
  WriteReferenceRun(one, 2, 4);
  WriteReferenceRun(two, 2, 4);
  std::string rank1;
  for (int step = 1; step <= 4; ++step) rank1 += RankLine(step, 1, step >= 3 ? 1 : 0);
  two.Write("rank-1.jsonl", rank1);
  const std::string page = FormatHtmlReport(VerifyForHtml(one.path(), two.path()));
  EXPECT_NE(page.find("Ranks disagree first at step <b class=\"step\">3</b> of <span class=\"mono\">" +
                      two.path() + "</span>, in the loss and the digest"),
            std::string::npos);
  EXPECT_NE(page.find("The two runs agree at every step they both have."), std::string::npos);
}

TEST(HtmlReportTest, HostileStringsFromTheRunRenderAsText) {
  TempDir dir;
  WriteReferenceRun(dir, 1, 3);
  nlohmann::json doc = nlohmann::json::parse(dir.Read("result.json"));
  doc["jax_version"] = "<script>alert('version')</script>";
  doc["plan"]["out_dir"] = "</svg><script>alert(1)</script>\"'&";
  doc["model"]["note"] = "\xff\xfe<img src=x onerror=alert(2)>";
  dir.Write("result.json", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  dir.Write("rank-0.jsonl", dir.Read("rank-0.jsonl") + "{\"loss\": \"</svg><script>x</script>\"}\n");
  const std::string page = FormatHtmlReport(VerifyForHtml(dir.path()));
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  // Every <svg> and </svg> is one the report wrote: as many open as close.
  size_t svgs_opened = 0, svgs_closed = 0;
  for (size_t at = page.find("<svg"); at != std::string::npos; at = page.find("<svg", at + 1)) ++svgs_opened;
  for (size_t at = page.find("</svg>"); at != std::string::npos; at = page.find("</svg>", at + 1)) ++svgs_closed;
  EXPECT_EQ(svgs_opened, svgs_closed);
  EXPECT_NE(page.find("&lt;script&gt;alert(&#39;version&#39;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(page.find("&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;"), std::string::npos);
  EXPECT_NE(page.find(std::string(kReplacementCharacter) + kReplacementCharacter + "&lt;img"), std::string::npos);
}

TEST(HtmlReportTest, TheErrorPageNamesTheErrorEscaped) {
  VerifyOptions options;
  options.run_dir = "/nowhere/<b>";
  const std::string page = FormatHtmlErrorReport(options, Status::Error("NOT_FOUND", "/nowhere/<b>"));
  EXPECT_NE(page.find("<h1 id=\"verdict\">ERROR</h1>"), std::string::npos);
  EXPECT_NE(page.find("NOT_FOUND: /nowhere/&lt;b&gt;"), std::string::npos);
}

TEST(ReportFileTest, ReplacesTheFileAtomicallyAndLeavesNoTemporary) {
  TempDir dir;
  dir.Write("report.html", "old");
  ASSERT_TRUE(WriteReportFile(dir.File("report.html"), "new").ok());
  EXPECT_EQ(dir.Read("report.html"), "new");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);
}

TEST(ReportFileTest, APlantedTemporaryLinkIsRefusedNotFollowed) {
  TempDir dir;
  dir.Write("target", "keep");
  const std::string temporary = dir.File("report.html.tmp-" + std::to_string(::getpid()));
  ASSERT_EQ(::symlink(dir.File("target").c_str(), temporary.c_str()), 0);
  Status status = WriteReportFile(dir.File("report.html"), "page");
  EXPECT_EQ(status.code(), "IO_ERROR");
  EXPECT_EQ(status.ToString(), "IO_ERROR: create " + temporary + ": File exists");
  EXPECT_EQ(dir.Read("target"), "keep");
}

// Worded as every file dmlp writes atomically words it (common/file_util.h).
TEST(ReportFileTest, AMissingDirectoryIsAnIoError) {
  TempDir dir;
  Status status = WriteReportFile(dir.File("no/such/report.html"), "page");
  EXPECT_EQ(status.ToString(), "IO_ERROR: open directory " + dir.File("no/such") + ": No such file or directory");
}

// Another dmlp-verify's temporary, or the user's FILE.tmp, is none of this one's business.
TEST(ReportFileTest, OnlyItsOwnTemporaryIsUsed) {
  TempDir dir;
  dir.Write("report.html.tmp", "the user's");
  dir.Write("report.html.tmp-1", "another dmlp-verify's");
  ASSERT_TRUE(WriteReportFile(dir.File("report.html"), "page").ok());
  EXPECT_EQ(dir.Read("report.html"), "page");
  EXPECT_EQ(dir.Read("report.html.tmp"), "the user's");
  EXPECT_EQ(dir.Read("report.html.tmp-1"), "another dmlp-verify's");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 3);
}

}  // namespace
}  // namespace dmlp::verify
