#include "verify/html_report.h"

#include <algorithm>

#include "verify/html_text.h"
#include "verify/svg_plot.h"

namespace dmlp::verify {
namespace {

constexpr size_t kMaxSettings = 200;     // result.json's plan/model/fingerprint rows shown per run
constexpr size_t kMaxRunsListed = 8;     // disagreement stretches listed per rank
constexpr size_t kMaxRanksListed = 64;

// One style sheet, inline: the page must need nothing but itself.
constexpr char kStyle[] = R"css(
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1140px;padding:0 16px 32px;color:#1d232a}
h1{font-size:30px;margin:0}h2{font-size:18px;margin:26px 0 8px;border-bottom:1px solid #d5dbe1}
header{padding:14px 18px;margin-top:14px;border-radius:6px;color:#fff}
header.pass{background:#1f7a3a}header.incomplete{background:#a26100}header.fail{background:#b42318}
header.error{background:#5b2a86}header p{margin:4px 0 0}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #d5dbe1;padding:3px 6px;text-align:left;
vertical-align:top;overflow-wrap:anywhere}th{background:#f1f4f7}table.run{width:auto;min-width:60%}
table.run th{white-space:nowrap;font-weight:500}#findings th,#findings code,td.severity,td.step{white-space:nowrap}
tr.error td.severity{color:#b42318;font-weight:600}tr.incomplete td.severity{color:#a26100;font-weight:600}
tr.warning td.severity{color:#7a5c00;font-weight:600}
code,.mono{font-family:ui-monospace,monospace;font-size:12px}
svg{width:100%;height:auto;display:block}.plot{fill:#fbfcfd;stroke:#c9d1d9}
.grid{stroke:#e6eaee}.tick{stroke:#57606a}text{font:12px system-ui,sans-serif;fill:#1d232a}
.axis-label{font-weight:600}.curve-a{fill:none;stroke:#1f5fbf;stroke-width:1.6}
.curve-b{fill:none;stroke:#d9480f;stroke-width:1.6;stroke-dasharray:5 3}.gap{fill:#f3c4c0;opacity:.7}
.marker line{stroke-width:1.5;stroke-dasharray:4 3}.marker.divergence line{stroke:#b42318}
.marker.divergence text{fill:#b42318;font-weight:600}.marker.runs line{stroke:#7b2cbf}
.marker.runs text{fill:#7b2cbf;font-weight:600}.marker.complete line{stroke:#57606a}
.agrees{fill:#8fd19e}.differs{fill:#d93025}.absent{fill:#b8bec4}
.key span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px}
)css";

std::string Cell(const std::string& text) { return "<td>" + text + "</td>"; }
std::string Row(const std::string& name, const std::string& value) { return "<tr><th>" + name + "</th>" + Cell(value) + "</tr>"; }

std::string DiffersIn(const std::string& what) {
  if (what == "both") return "the loss and the digest (params_sha256)";
  if (what == "params_sha256") return "the digest (params_sha256) only";
  if (what == "loss") return "the loss only";
  if (what == "step") return "the steps: one run has a step the other lacks";
  if (what == "loss_tolerance") return "the loss, by more than --tolerance";
  return "unknown";
}

std::string Header(const char* verdict, int exit_code, const std::string& detail) {
  std::string css = verdict;
  std::transform(css.begin(), css.end(), css.begin(), [](unsigned char c) { return std::tolower(c); });
  return "<header class=\"" + css + "\"><h1 id=\"verdict\">" + verdict + "</h1><p>exit code " +
         std::to_string(exit_code) + " &middot; " + detail + "</p></header>";
}

// The first bytes of every page: how dmlp-verify knows a FILE it may replace.
constexpr std::string_view kPageMarker =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"generator\" content=\"dmlp-verify\">";

std::string PageStart(const std::string& title) {
  return std::string(kPageMarker) +
         "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
         "<meta name=\"viewport\" content=\"width=device-width\"><title>" + title + "</title><style>" + kStyle +
         "</style></head><body>\n";
}

std::string PageEnd() {
  return "<footer><p>Written by dmlp-verify " DMLP_VERSION
         " from the findings its text and JSON reports list. No script, no external resource.</p></footer>"
         "</body></html>\n";
}

// Where each rank ran: one row per rank with an env file; nothing without them.
std::string EnvironmentRows(const RunReport& run) {
  std::string html;
  for (size_t i = 0; i < run.environments.size() && i < kMaxSettings; ++i)
    html += Row("rank " + std::to_string(run.environments[i].rank) + " ran on",
                HtmlEscape(DescribeEnvironment(run.environments[i]), 400));
  if (run.environments.size() > kMaxSettings)
    html += Row("&hellip;", std::to_string(run.environments.size() - kMaxSettings) + " more ranks not shown");
  return html;
}

std::string RunTable(const RunReport& run) {
  std::string html = "<table class=\"run\">";
  html += Row("run directory", "<span class=\"mono\">" + HtmlEscape(run.dir, 400) + "</span>");
  html += Row("format, version", HtmlEscape(run.format) + ", " + HtmlEscape(run.version, 160));
  html += Row("ranks", std::to_string(run.processes));
  html += Row("steps", std::to_string(run.receipts.last_step));
  html += Row("result.json, state file", HtmlEscape(run.result_status) + ", " + HtmlEscape(run.state_status));
  html += Row("steps where ranks disagree", std::to_string(run.receipts.divergent_steps));
  if (run.trace) html += Row("last complete step", std::to_string(run.trace->last_complete_step()));
  html += EnvironmentRows(run);
  for (size_t i = 0; i < run.settings.size() && i < kMaxSettings; ++i)
    html += Row("<span class=\"mono\">" + HtmlEscape(run.settings[i].first, 120) + "</span>",
                HtmlEscape(run.settings[i].second, 300));
  if (run.settings.size() > kMaxSettings)
    html += Row("&hellip;", std::to_string(run.settings.size() - kMaxSettings) + " more settings not shown");
  return html + "</table>";
}

std::string DivergenceSection(const Report& report) {
  std::string html = "<h2>First divergence</h2>";
  const std::optional<Divergence>& first = report.first_divergence;
  if (!first)
    html += "<p id=\"first-divergence\">None: every step that was compared agrees.</p>";
  else if (first->between == "ranks")
    // Verify() takes RUN_DIR's own divergence first, else OTHER_RUN's.
    html += "<p id=\"first-divergence\">Ranks disagree first at step <b class=\"step\">" +
            std::to_string(first->step) + "</b>" +
            (report.against && !report.run.receipts.divergence
                 ? " of <span class=\"mono\">" + HtmlEscape(report.against->dir, 400) + "</span>"
                 : std::string()) +
            ", in " + DiffersIn(first->differs_in) + "; ranks with equal records: " + GroupsText(first->groups) +
            ".</p>";
  if (report.against_verdict && report.against_verdict->losses)
    html += "<p id=\"tolerance\" class=\"" + std::string(report.against_verdict->losses->within() ? "within" : "beyond") +
            "\">Compared by loss (--tolerance): " + HtmlEscape(LossComparisonText(*report.against_verdict->losses)) +
            ". Relative difference = |run &minus; golden| / |golden| per step.</p>";
  if (report.between_runs) {
    const Divergence& runs = *report.between_runs;
    html += "<p id=\"runs-part\">The two runs part at step <b class=\"step\">" + std::to_string(runs.step) +
            "</b>: they differ in " + DiffersIn(runs.differs_in) + ".</p>";
  } else if (report.against && !(report.against_verdict && report.against_verdict->losses)) {
    html += "<p id=\"runs-part\">The two runs agree at every step they both have.</p>";
  }
  return html;
}

std::string LossSection(const Report& report) {
  if (!report.run.trace) return {};
  LossChart chart;
  chart.last_step = report.run.receipts.last_step;
  chart.curves.push_back({report.run.dir + " (" + report.run.trace->curve_source() + ")", report.run.trace.get()});
  if (report.against && report.against->trace) {
    chart.curves.push_back(
        {report.against->dir + " (" + report.against->trace->curve_source() + ")", report.against->trace.get()});
    chart.last_step = std::max(chart.last_step, report.against->receipts.last_step);
  }
  if (report.first_divergence && report.first_divergence->between == "ranks")
    chart.markers.push_back({report.first_divergence->step,
                             "ranks disagree: step " + std::to_string(report.first_divergence->step), "divergence"});
  if (report.between_runs)
    chart.markers.push_back({report.between_runs->step,
                             report.between_runs->differs_in == "loss_tolerance"
                                 ? "beyond --tolerance: step " + std::to_string(report.between_runs->step)
                                 : "runs part: step " + std::to_string(report.between_runs->step) + " (" +
                                       report.between_runs->differs_in + ")",
                             "runs"});
  const AgainstVerdict* against = report.against_verdict ? &*report.against_verdict : nullptr;
  if (against && against->losses && against->losses->largest_step > 0 &&
      against->losses->largest_step != against->losses->first_exceeding)
    chart.markers.push_back({against->losses->largest_step,
                             "largest loss difference: step " + std::to_string(against->losses->largest_step),
                             "runs"});
  if (report.run.trace->last_complete_step() > 0)
    chart.markers.push_back({report.run.trace->last_complete_step(),
                             "last complete step " + std::to_string(report.run.trace->last_complete_step()),
                             "complete"});
  std::string html = "<h2>Loss per step</h2>" + LossChartSvg(chart);
  for (const LossCurve& curve : chart.curves)
    if (curve.trace->gap_count() > 0)
      html += "<p class=\"gaps\">" + HtmlEscape(curve.label, 400) + ": " + std::to_string(curve.trace->gap_count()) +
              " gap(s) in the curve (shaded).</p>";
  return html;
}

std::string StripSection(const RunReport& run) {
  if (!run.trace || run.trace->ranks().empty()) return {};
  const RunTrace& trace = *run.trace;
  std::string html = "<h3 class=\"mono\">" + HtmlEscape(run.dir, 400) + "</h3>" + AgreementStripSvg(trace) +
                     "<ul class=\"disagreements\">";
  size_t listed = 0;
  for (size_t rank = 0; rank < trace.ranks().size() && listed < kMaxRanksListed; ++rank) {
    std::vector<StateRun> runs = trace.RankRuns(rank, rank + 1);
    std::string items;
    size_t shown = 0, total = 0;
    for (const StateRun& run_of_steps : runs) {
      if (run_of_steps.state == kRankAgrees) continue;
      if (++total > kMaxRunsListed) continue;
      items += std::string(shown++ ? ", " : "") + (run_of_steps.state == kRankDiffers ? "differs" : "no record") +
               " at steps " + std::to_string(run_of_steps.first) + "&ndash;" + std::to_string(run_of_steps.last);
    }
    if (total == 0) continue;
    if (total > shown) items += ", and " + std::to_string(total - shown) + " more stretches";
    html += "<li>rank " + std::to_string(trace.ranks()[rank]) + ": " + items + "</li>";
    ++listed;
  }
  if (listed == 0) html += "<li>every rank agrees with the others at every step</li>";
  html += "</ul>";
  if (trace.agreement().width() > 1)
    html += "<p>Steps are grouped " + std::to_string(trace.agreement().width()) +
            " to a bucket; a bucket shows the worst state of its steps.</p>";
  return html;
}

std::string FindingsSection(const FindingSink& findings) {
  std::string html = "<h2>Findings</h2>";
  if (findings.kept().empty()) return html + "<p id=\"no-findings\">No findings.</p>";
  html += "<table id=\"findings\"><tr><th>severity</th><th>check</th><th>file:line</th><th>step</th>"
          "<th>message</th><th>expected</th><th>actual</th></tr>";
  for (const Finding& finding : findings.kept()) {
    std::string where = HtmlEscape(finding.file, 400);
    if (finding.line > 0) where += ":" + std::to_string(finding.line);
    const std::string severity(SeverityName(finding.severity));
    html += "<tr class=\"" + severity + "\"><td class=\"severity\">" + severity + "</td>" +
            Cell("<code>" + HtmlEscape(finding.id, 80) + "</code>") + Cell("<span class=\"mono\">" + where + "</span>") +
            "<td class=\"step\">" + (finding.step > 0 ? std::to_string(finding.step) : "") + "</td>" + Cell(HtmlEscape(finding.message, 400)) +
            Cell("<span class=\"mono\">" + HtmlEscape(finding.expected.value_or(""), 160) + "</span>") +
            Cell("<span class=\"mono\">" + HtmlEscape(finding.actual.value_or(""), 160) + "</span>") + "</tr>";
  }
  html += "</table>";
  if (findings.dropped() > 0)
    html += "<p>" + std::to_string(findings.dropped()) + " more findings were counted but not listed.</p>";
  return html;
}

// --replay: what the audit recomputed, segment by segment, and the first step that differs.
std::string ReplaySection(const std::optional<ReplayAudit>& audit) {
  if (!audit) return "";
  std::string html = "<h2>Replay audit</h2>";
  if (!audit->not_run.empty())
    return html + "<p id=\"replay\" class=\"mono\">" + HtmlEscape(audit->not_run, 2000) + "</p>";
  html += "<p id=\"replay\">" + std::to_string(audit->steps_replayed) + " of " + std::to_string(audit->run_steps) +
          " steps recomputed in " + std::to_string(audit->segments.size()) + " of " +
          std::to_string(audit->run_segments) + " segments (seed " + std::to_string(audit->seed) + ")" +
          (audit->first_mismatch_step ? "; first mismatch: <span class=\"mono\">" +
                                            HtmlEscape(audit->first_mismatch, 2000) + "</span>"
                                      : std::string()) +
          "</p><table class=\"run\">";
  for (const ReplaySegmentOutcome& segment : audit->segments)
    html += Row("steps " + std::to_string(segment.segment.from + 1) + "&ndash;" + std::to_string(segment.segment.to),
                segment.outcome + (segment.detail.empty() ? "" : ": " + HtmlEscape(segment.detail, 2000)));
  return html + "</table>";
}

}  // namespace

std::string FormatHtmlReport(const Report& report) {
  const char* verdict = VerdictName(report.verdict);
  const FindingSink& findings = report.findings;
  std::string html = PageStart(std::string("dmlp-verify: ") + verdict + " &mdash; " + HtmlEscape(report.run.dir, 200));
  const RunReport& run = report.run;
  html += Header(verdict, report.exit_code,
                 std::to_string(run.processes) + " ranks &middot; " + std::to_string(run.receipts.last_step) +
                     " steps &middot; " + std::to_string(findings.errors()) + " error(s), " +
                     std::to_string(findings.incompletes()) + " incomplete, " +
                     std::to_string(findings.warnings()) + " warning(s), " + std::to_string(findings.infos()) +
                     " info &middot; <span class=\"mono\">" + HtmlEscape(run.dir, 400) + "</span>");
  // Pictures first (what a person looks for), then the details they point to.
  html += DivergenceSection(report);
  html += ReplaySection(report.replay);
  html += LossSection(report);
  html += "<h2>Ranks &times; steps</h2><p class=\"key\"><span style=\"background:#8fd19e\"></span>"
          "agrees with the majority<span style=\"background:#d93025\"></span>differs"
          "<span style=\"background:#b8bec4\"></span>no record at that step</p>";
  html += StripSection(run);
  if (report.against) html += StripSection(*report.against);
  html += FindingsSection(findings);
  html += "<h2>Run" + std::string(report.against ? "s" : "") + ": plan and fingerprint</h2>" + RunTable(run);
  if (report.against) html += "<p>compared with</p>" + RunTable(*report.against);
  return html + PageEnd();
}

std::string FormatHtmlErrorReport(const VerifyOptions& options, const Status& error) {
  std::string html = PageStart("dmlp-verify: ERROR &mdash; " + HtmlEscape(options.run_dir, 200));
  html += Header("ERROR", 2, "dmlp-verify could not check the run");
  html += "<h2>Error</h2><p id=\"error\" class=\"mono\">" + HtmlEscape(error.ToString(), 2000) + "</p>";
  html += "<table class=\"run\">" + Row("run directory", HtmlEscape(options.run_dir, 400));
  if (options.against) html += Row("against", HtmlEscape(*options.against, 400));
  return html + "</table>" + PageEnd();
}

bool IsHtmlReport(std::string_view page) { return page.starts_with(kPageMarker); }

}  // namespace dmlp::verify
