#include "verify/verifier.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>

#include "common/errno_error.h"
#include "common/format/error_codes.h"
#include "common/format/result_json.h"
#include "common/receipt_reader.h"

#include "verify/compare.h"
#include "verify/experiment.h"
#include "verify/result_check.h"
#include "verify/result_doc.h"
#include "verify/run_dir.h"
#include "verify/same_file.h"
#include "verify/state_check.h"

namespace dmlp::verify {
namespace {

constexpr int kMaxPasses = 10;
constexpr useconds_t kConfirmPauseMicros = 50000;

// Reads at most `limit` + 1 bytes, enough to tell that a file is too large.
Result<std::string> ReadBounded(int fd, size_t limit, const std::string& display) {
  std::string text;
  char buffer[16384];
  while (text.size() <= limit) {
    ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return ErrnoError(kIoError, "read " + display);
    if (got == 0) break;
    text.append(buffer, static_cast<size_t>(got));
  }
  return text;
}

// result.json (and its temporary); the parsed document when valid.
Result<std::optional<ResultDoc>> ReadResult(const RunDir& dir, RunReport& report, FindingSink& sink) {
  const std::string result = dir.Display(kResultFile);
  DMLP_ASSIGN_OR_RETURN(RunFile file, dir.OpenFile(kResultFile));
  DMLP_ASSIGN_OR_RETURN(RunFile temporary, dir.OpenFile("result.json.tmp"));
  const bool has_temporary = temporary.kind != FileKind::kAbsent;
  if (file.kind == FileKind::kAbsent) {
    sink.Add(Finding::Of("result.missing", result, "no result.json: the run has not finished"));
    if (has_temporary)
      sink.Add(Finding::Of("result.tmp_unrenamed", dir.Display("result.json.tmp"),
                           "result.json.tmp was never renamed to result.json"));
    return std::optional<ResultDoc>();
  }
  if (has_temporary)
    sink.Add(Finding::Of("result.tmp_leftover", dir.Display("result.json.tmp"),
                         "result.json.tmp exists beside result.json"));
  if (file.kind == FileKind::kNotRegular) {
    report.result_status = "invalid";
    sink.Add(Finding::Of("file.not_regular", result, "not a regular file (not followed)"));
    return std::optional<ResultDoc>();
  }
  DMLP_ASSIGN_OR_RETURN(std::string text, ReadBounded(file.fd.get(), kMaxResultJsonBytes, result));
  ResultParse parse = ParseResultJson(text);
  if (!parse.doc) {
    report.result_status = "invalid";
    sink.Add(Finding::Of("result.invalid", result, parse.problem));
    return std::optional<ResultDoc>();
  }
  report.result_status = "valid";
  report.format = FormatName(parse.doc->format);
  report.version = parse.doc->version;
  return parse.doc;
}

// A receipt file of a run whose result.json says it has `steps` steps holds, when
// valid, exactly that many lines (metrics.jsonl too), none longer than
// kMaxReceiptLineBytes plus its newline. A larger file cannot be valid, and
// reading it would take as long as its apparent size (a sparse 100 GB file:
// minutes), so it is refused from fstat alone. Without result.json the run's
// length is unknown and files are read whatever their size.
bool RefusedForSize(const RunDir& dir, const std::string& name, const RunFile& file,
                    const std::optional<ResultDoc>& doc, FindingSink& sink) {
  if (!doc) return false;
  struct stat info {};
  if (::fstat(file.fd.get(), &info) != 0) return false;  // then reading will say what is wrong
  const uint64_t steps = static_cast<uint64_t>(std::max<int64_t>({doc->steps, doc->plan_steps, 0}));
  uint64_t limit = 0;
  if (__builtin_mul_overflow(steps, uint64_t{kMaxReceiptLineBytes + 1}, &limit)) return false;
  const uint64_t size = static_cast<uint64_t>(info.st_size);
  if (size <= limit) return false;
  sink.Add(Finding::Of("file.too_large", dir.Display(name),
                       std::to_string(size) + " bytes; " + std::to_string(steps) + " steps of at most " +
                           std::to_string(kMaxReceiptLineBytes + 1) + " bytes allow " +
                           std::to_string(limit) + " (not read)")
               .Expect("<= " + std::to_string(limit), std::to_string(size)));
  return true;
}

// A rank file absent below the highest one present. Only result.json proves
// that the run ended with every rank's file written (rank 0 writes it last,
// after every rank recorded every step): without it the ranks of a live job
// may still be creating their files (each creates its own, in no set order),
// and a start stopped by a signal removes the files that hold no record yet.
Finding MissingRankFile(const RunDir& dir, const std::string& name, bool has_result, const std::string& why) {
  if (has_result) return Finding::Of("ranks.missing_file", dir.Display(name), why);
  return Finding::Of("ranks.not_created", dir.Display(name), why + " yet, and there is no result.json");
}

// The rank files to read: 0..P-1 where present and regular; reports the rest.
Result<std::map<int64_t, std::string>> SelectRankFiles(const RunDir& dir, const DirListing& listing,
                                                      const std::optional<ResultDoc>& doc,
                                                      RunReport& report, FindingSink& sink) {
  for (const std::string& name : listing.bad_rank_names)
    sink.Add(Finding::Of("ranks.bad_file_name", dir.Display(name), "not a canonical rank-N.jsonl name"));
  const int64_t found = listing.rank_files.empty() ? 0 : listing.rank_files.rbegin()->first + 1;
  report.processes = doc ? doc->processes : found;
  if (report.processes > static_cast<int64_t>(kMaxRankFiles) || listing.rank_file_count > kMaxRankFiles)
    sink.Add(Finding::Of("ranks.too_many", dir.path(),
                         "more than " + std::to_string(kMaxRankFiles) + " ranks; only the first are checked"));
  const int64_t checked = std::min<int64_t>(report.processes, kMaxRankFiles);
  std::map<int64_t, std::string> selected;
  for (int64_t rank = 0; rank < checked; ++rank) {
    const std::string name = "rank-" + std::to_string(rank) + ".jsonl";
    if (!listing.rank_files.contains(rank)) {
      sink.Add(MissingRankFile(dir, name, doc.has_value(),
                               "rank " + std::to_string(rank) + " of 0.." + std::to_string(report.processes - 1) +
                                   " has no receipt file"));
      continue;
    }
    DMLP_ASSIGN_OR_RETURN(RunFile file, dir.OpenFile(name));
    if (file.kind == FileKind::kRegular) {
      if (!RefusedForSize(dir, name, file, doc, sink)) selected[rank] = name;
    } else if (file.kind == FileKind::kAbsent) {  // listed, then renamed: VerifyRun reads again
      sink.Add(MissingRankFile(dir, name, doc.has_value(), "removed or renamed while being read"));
    } else
      sink.Add(Finding::Of("file.not_regular", dir.Display(name), "not a regular file (not followed)"));
  }
  for (const auto& [rank, name] : listing.rank_files)
    if (rank >= report.processes)
      sink.Add(Finding::Of("ranks.extra_file", dir.Display(name),
                           "result.json says " + std::to_string(report.processes) + " processes"));
  return selected;
}

}  // namespace

namespace {

// "No receipts" is a contradiction only beside a result.json, which says the
// run finished. Without one, no receipt file is a job starting up (OUT_DIR and
// dmlp.lock come before any receipt file, and the lock is not taken at once)
// or a start that stopped before creating them; receipt files that hold no
// record are a job before its first step, or one that ended there. Neither
// contradicts anything.
void JudgeNoRecords(const RunDir& dir, bool any_rank_file, bool has_result, FindingSink& sink) {
  if (has_result) {
    sink.Add(Finding::Of("ranks.none", dir.path(),
                         any_rank_file ? "the receipt files hold no record" : "no receipt file to read"));
    return;
  }
  if (any_rank_file) {
    sink.Add(Finding::Of("ranks.no_record", dir.path(), "the receipt files hold no record yet"));
    return;
  }
  const std::string holder = dir.LockHolderPid();
  sink.Add(Finding::Of("ranks.not_started", dir.path(),
                       holder.empty() ? "no receipt file and no result.json: a job not started yet, or one "
                                        "stopped before creating them"
                                      : "no receipt file yet; the job holding dmlp.lock (pid " + holder +
                                            ") has not created them"));
}

// One reading of the run directory, from `listing`.
Result<RunReport> VerifyPass(const RunDir& dir, const DirListing& listing, FindingSink& sink, bool trace) {
  RunReport report;
  report.dir = dir.path();
  const size_t incompletes_before = sink.incompletes();
  DMLP_ASSIGN_OR_RETURN(std::optional<ResultDoc> doc, ReadResult(dir, report, sink));
  DMLP_ASSIGN_OR_RETURN(report.environments, ReadEnvironments(dir, listing, sink));
  DMLP_ASSIGN_OR_RETURN(auto rank_files, SelectRankFiles(dir, listing, doc, report, sink));
  // None to read: none listed, or every one missing, irregular or too large (each said so).
  if (rank_files.empty()) JudgeNoRecords(dir, false, doc.has_value(), sink);
  DMLP_ASSIGN_OR_RETURN(RunFile metrics, dir.OpenFile("metrics.jsonl"));
  if (metrics.kind == FileKind::kNotRegular)
    sink.Add(Finding::Of("file.not_regular", dir.Display("metrics.jsonl"), "not a regular file (not followed)"));
  const bool read_metrics =
      metrics.kind == FileKind::kRegular && !RefusedForSize(dir, "metrics.jsonl", metrics, doc, sink);
  auto run_trace = trace ? std::make_shared<RunTrace>() : nullptr;
  DMLP_ASSIGN_OR_RETURN(report.receipts, CheckReceiptSet(dir, rank_files, read_metrics, sink, run_trace.get()));
  report.trace = std::move(run_trace);
  if (!rank_files.empty() && !report.receipts.LastRecord()) JudgeNoRecords(dir, true, doc.has_value(), sink);
  // Rank 0 creates metrics.jsonl before rank-0.jsonl and, when a start stops,
  // removes it after: only a rank-0.jsonl with bytes in it proves it is missing.
  const bool rank0_wrote = !report.receipts.ranks.empty() && report.receipts.ranks.front().rank == 0 &&
                           report.receipts.ranks.front().bytes > 0;
  if (metrics.kind == FileKind::kAbsent && rank0_wrote)
    sink.Add(Finding::Of("metrics.missing", dir.Display("metrics.jsonl"), "rank 0 wrote no metrics.jsonl"));
  if (doc) {
    report.settings = doc->settings;
    CheckResultDoc(*doc, report.receipts, dir.Display(kResultFile), sink);
    DMLP_ASSIGN_OR_RETURN(report.state_status, CheckStateFile(dir, *doc, report.receipts.LastRecord(), sink));
  }
  report.finished = doc && doc->complete && sink.incompletes() == incompletes_before;
  report.result = std::move(doc);
  return report;
}

}  // namespace

Result<RunReport> VerifyRun(const std::string& path, FindingSink& sink, bool trace,
                            const std::function<void(int)>& after_listing) {
  DMLP_ASSIGN_OR_RETURN(RunDir dir, RunDir::Open(path));
  // A live job renames receipt files under us (RESUME=1 moves them into
  // superseded/<n>, a start creates them): a pass whose listing changed while
  // it read is thrown away and done again, so a rename is never judged as a
  // missing or irregular file. The rename runs take microseconds; ten passes
  // in a row that all see one means the directory keeps changing: INCOMPLETE,
  // with none of the last pass's findings, which may be the renames themselves.
  const FindingSink before_passes = sink;
  bool confirming = false;
  for (int pass = 1;; ++pass) {
    DMLP_ASSIGN_OR_RETURN(DirListing listing, dir.List());
    if (after_listing) after_listing(pass);
    // A file renamed between the listing and its opening can also fail the
    // pass (NOT_FOUND): judged like a finding, by whether the listing held.
    Result<RunReport> report = VerifyPass(dir, listing, sink, trace);
    DMLP_ASSIGN_OR_RETURN(DirListing again, dir.List());
    const bool settled = again.entries == listing.entries;
    // An error in a live run (dmlp.lock held) may be a move caught halfway by
    // a pass that fit between two renames: it must be seen again after a pause.
    if (settled && !confirming && sink.errors() > before_passes.errors() &&
        !dir.LockHolderPid().empty()) {
      confirming = true;
      sink = before_passes;
      ::usleep(kConfirmPauseMicros);
      continue;
    }
    if (settled || (pass >= kMaxPasses && !report.ok())) return report;
    if (pass >= kMaxPasses) {  // what this pass found may be the renames themselves: not kept
      sink = before_passes;
      sink.Add(Finding::Of("run.changing", dir.path(),
                           "receipt files were created, renamed or removed while being read, in " +
                               std::to_string(kMaxPasses) + " passes in a row; verify again"));
      report->finished = false;
      return report;
    }
    sink = before_passes;
    ::usleep(static_cast<useconds_t>(pass) * 10000);  // 10 ms, 20 ms, ...: let the renames finish
  }
}

namespace {

// The file a run's loss curve is read from: metrics.jsonl where it was read,
// else the lowest-ranked receipt file (the verifier compared them already).
ReceiptFile LossCurveFile(const RunDir& dir, const RunReport& run) {
  if (run.receipts.metrics) return ReceiptFile{&dir, run.receipts.metrics->name, std::nullopt};
  return ReceiptFile{&dir, run.receipts.ranks.front().name, run.receipts.ranks.front().rank};
}

// --tolerance: the loss curves decide, within REL (loss_tolerance.h); the
// receipts' bitwise comparison is kept for the report only.
Status JudgeLosses(const VerifyOptions& options, const RunDir& golden_dir, const RunDir& run_dir, Report& report,
                   AgainstVerdict& verdict) {
  const ReceiptFile golden = LossCurveFile(golden_dir, *report.against);
  const ReceiptFile run = LossCurveFile(run_dir, report.run);
  DMLP_ASSIGN_OR_RETURN(verdict.losses, CompareLosses(golden, run, *options.tolerance));
  AddLossFindings(*verdict.losses, golden, run, report.against->finished, report.run.finished, report.findings);
  if (verdict.losses->first_exceeding != 0)
    report.between_runs = Divergence{verdict.losses->first_exceeding, "runs", {}, {run_dir.path(), golden_dir.path()},
                                     "loss_tolerance"};
  return Status::Ok();
}

// --against GOLDEN: must the runs match (comparability.h), then do they (compare.h).
Status JudgeAgainst(const VerifyOptions& options, Report& report) {
  const auto& golden_ranks = report.against->receipts.ranks;
  const auto& run_ranks = report.run.receipts.ranks;
  if (golden_ranks.empty() || run_ranks.empty()) return Status::Ok();  // ranks.none or ranks.not_started said why
  DMLP_ASSIGN_OR_RETURN(RunDir golden_dir, RunDir::Open(*options.against));
  DMLP_ASSIGN_OR_RETURN(RunDir run_dir, RunDir::Open(options.run_dir));
  const ReceiptFile golden{&golden_dir, golden_ranks.front().name, golden_ranks.front().rank};
  const ReceiptFile run{&run_dir, run_ranks.front().name, run_ranks.front().rank};
  AgainstVerdict verdict;
  verdict.comparability = CompareSetups(report.against->result, report.run.result,
                                        report.against->environments, report.run.environments);
  // Unknown comparability is held to matching, as before (no finding; the
  // verdict line says so); --require-comparable refuses it too.
  const bool not_comparable = verdict.comparability.kind == Comparability::Kind::kNotComparable;
  if (not_comparable || (options.require_comparable && verdict.comparability.kind == Comparability::Kind::kUnknown)) {
    std::string why;
    for (const std::string& reason : verdict.comparability.reasons) why += (why.empty() ? "" : "; ") + reason;
    Finding finding = Finding::Of("against.not_comparable", run_dir.path(),
                                  not_comparable
                                      ? "not comparable with " + golden_dir.path() + ": " + why
                                      : "comparability with " + golden_dir.path() + " unknown: " + why);
    if (options.require_comparable) finding.severity = Severity::kError;
    report.findings.Add(std::move(finding));
  }
  if (std::optional<Finding> other = OtherExperimentFinding(report.against->result, report.run.result,
                                                            golden_dir.path(), run_dir.path(),
                                                            options.allow_different_experiment))
    report.findings.Add(std::move(*other));
  DMLP_ASSIGN_OR_RETURN(verdict.comparison, CompareRuns(golden, run));
  if (options.tolerance) {
    DMLP_RETURN_IF_ERROR(JudgeLosses(options, golden_dir, run_dir, report, verdict));
  } else {
    AddComparisonFindings(verdict.comparison, verdict.comparability, golden, run, report.against->finished,
                          report.run.finished, report.findings);
    if (verdict.comparison.outcome == RunComparison::Outcome::kDiverged)
      report.between_runs = Divergence{verdict.comparison.step, "runs", {}, {run_dir.path(), golden_dir.path()},
                                       verdict.comparison.what};
  }
  if (report.between_runs && !report.first_divergence) report.first_divergence = report.between_runs;
  report.against_verdict = std::move(verdict);
  return Status::Ok();
}

}  // namespace

Result<Report> Verify(const VerifyOptions& options) {
  // One directory twice matches trivially: a comparison that proves nothing
  // is refused, not reported as a PASS.
  if (options.against && NameTheSameFile(options.run_dir, *options.against))
    return Status::Error(kUsageError, "RUN_DIR " + options.run_dir + " and --against " + *options.against +
                                            " are the same directory; compare two runs");
  Report report;
  report.options = options;
  DMLP_ASSIGN_OR_RETURN(report.run, VerifyRun(options.run_dir, report.findings, options.trace,
                                               options.after_listing));
  report.first_divergence = report.run.receipts.divergence;
  if (options.against) {
    DMLP_ASSIGN_OR_RETURN(report.against, VerifyRun(*options.against, report.findings, options.trace));
    if (!report.first_divergence) report.first_divergence = report.against->receipts.divergence;
    DMLP_RETURN_IF_ERROR(JudgeAgainst(options, report));
  }
  // After every ordinary check: an audit replays only a run they passed.
  if (options.replay) {
    DMLP_ASSIGN_OR_RETURN(report.replay, AuditByReplay(*options.replay, report.run, report.findings));
  }
  if (report.findings.errors() > 0) {
    report.verdict = Verdict::kFail;
    report.exit_code = 1;
  } else if (report.findings.incompletes() > 0) {
    report.verdict = Verdict::kIncomplete;
    report.exit_code = options.allow_incomplete ? 0 : 3;
  }
  return report;
}

const char* VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kPass: return "PASS";
    case Verdict::kIncomplete: return "INCOMPLETE";
    case Verdict::kFail: return "FAIL";
  }
  return "FAIL";
}

}  // namespace dmlp::verify
