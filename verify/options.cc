#include "verify/options.h"

#include <memory>
#include <sstream>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/build_info.h"
#include "common/format/error_codes.h"
#include "common/number_grammar.h"
#include "verify/html_report.h"
#include "verify/loss_tolerance.h"
#include "verify/report_file.h"
#include "verify/report_json.h"
#include "verify/same_file.h"

namespace dmlp::verify {
namespace {

// Shows `--json[=FILE]` in --help instead of CLI11's `--json{-}` spelling.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override {
    if (!is_positional && option->check_lname("json")) return "--json[=FILE]";
    if (!is_positional && option->check_lname("replay")) return "--replay[=N|all]";
    return CLI::Formatter::make_option_name(option, is_positional);
  }
};

// The run directories no report may be written into.
std::vector<std::string> RunDirs(const CommandLine& command) {
  std::vector<std::string> runs = {command.verify.run_dir};
  if (command.verify.against) runs.push_back(*command.verify.against);
  return runs;
}

}  // namespace

ParseOutcome ParseCommandLine(int argc, const char* const* argv) {
  CLI::App app{"dmlp-verify: checks that a dmlp (or reference JAX) run directory proves a complete,\n"
               "consistent run. Exit 0 verified, 1 contradiction, 2 trouble, 3 incomplete.",
               "dmlp-verify"};
  app.formatter(std::make_shared<HelpFormatter>());
  app.footer("Every check, exit code and report: docs/verifier.md (in dmlp's sources).");
  CommandLine command;
  std::string json_value;
  std::string against;
  app.add_flag("--allow-incomplete", command.verify.allow_incomplete,
               "exit 0 instead of 3 when the run is consistent but incomplete");
  CLI::Option* against_option =
      app.add_option("--against", against,
                     "also verify GOLDEN, say whether the two must match, and compare them step by step")
          ->type_name("GOLDEN");
  app.add_flag("--require-comparable", command.verify.require_comparable,
               "with --against: fail when the runs need not match (plan, build or stack differ)")
      ->needs(against_option);
  app.add_flag("--allow-different-experiment", command.verify.allow_different_experiment,
               "with --against: the runs are meant to be two experiments (SEED, sizes, LEARNING_RATE...): "
               "report the difference as info instead of failing")
      ->needs(against_option);
  std::string tolerance;
  app.add_option("--tolerance", tolerance,
                 "with --against, for runs that cannot give the same bits: pass when every step's loss is "
                 "within REL relative of GOLDEN's (|run - golden| / |golden| <= REL)")
      ->type_name("REL")
      ->needs(against_option);
  // `{-}` makes a bare --json mean "-" (stdout); --json=FILE names a file.
  CLI::Option* json = app.add_flag("--json{-}", json_value,
                                   "write the JSON report (schema dmlp-verify/1) to stdout, or --json=FILE");
  std::string html_value;
  CLI::Option* html = app.add_option("--html", html_value,
                                     "also write a self-contained HTML report (loss curve, rank x step agreement, "
                                     "findings) to FILE")
                          ->type_name("FILE");
  app.add_flag("--html-optional", command.html_optional,
               "the HTML report is an extra: when FILE is refused or cannot be written, warn and keep the "
               "verdict's exit code")
      ->needs(html);
  // `{3}` makes a bare --replay the default sample; --replay=N or --replay=all.
  std::string replay_value;
  CLI::Option* replay = app.add_flag("--replay{" + std::to_string(ReplayRequest::kDefaultSegments) + "}",
                                     replay_value,
                                     "after the checks pass, recompute N segments between kept checkpoints "
                                     "(default " + std::to_string(ReplayRequest::kDefaultSegments) +
                                         ", or all) with dmlp-train here and compare every receipt: --replay[=N|all]");
  std::string replay_seed;
  app.add_option("--replay-seed", replay_seed, "with --replay=N: choose the segments from seed S (repeats an audit)")
      ->type_name("S")
      ->needs(replay);
  app.add_flag("--list-checks", command.list_checks, "print every check id, severity and meaning, and exit");
  app.add_option("RUN_DIR", command.verify.run_dir, "the run directory to verify");
  app.set_version_flag("--version", VersionText("dmlp-verify"));
  ParseOutcome outcome;
  std::ostringstream out, err;
  try {
    // CLI11 reads "--json=" as a bare --json (stdout); an empty FILE is refused like the others.
    for (int i = 1; i < argc && std::string_view(argv[i]) != "--"; ++i)
      if (std::string_view(argv[i]) == "--json=")
        throw CLI::ValidationError("--json=: FILE is empty; name the file, or give --json alone for stdout");
    app.parse(argc, argv);
    if (!command.list_checks && command.verify.run_dir.empty())
      throw CLI::RequiredError("RUN_DIR");
    // An empty value is what an unset shell variable gives ("--against $GOLDEN"):
    // taken as absent it would compare nothing and pass, so it is refused.
    if (against_option->count() > 0 && against.empty())
      throw CLI::ValidationError("--against: GOLDEN is empty; name the run directory to compare with");
    if (html->count() > 0 && html_value.empty())
      throw CLI::ValidationError("--html: FILE is empty; name the file to write the page to");
    if (replay->count() > 0) {
      ReplayRequest request;
      if (replay_value == "all") {
        request.segments.reset();
      } else {
        Result<int64_t> count = ParseInteger(replay_value, 1, INT32_MAX);
        if (!count.ok()) throw CLI::ValidationError("--replay=" + replay_value + ": N " + count.status().detail() +
                                                    "; give a number of segments or all");
        request.segments = *count;
      }
      if (app.count("--replay-seed") > 0) {
        Result<int64_t> seed = ParseInteger(replay_seed, 0, INT64_MAX);
        if (!seed.ok()) throw CLI::ValidationError("--replay-seed: S " + seed.status().detail());
        request.seed = static_cast<uint64_t>(*seed);
      }
      command.verify.replay = request;
    }
    if (app.count("--tolerance") > 0) {
      Result<double> rel = ParseTolerance(tolerance);
      if (!rel.ok()) throw CLI::ValidationError(rel.status().detail());
      command.verify.tolerance = *rel;
    }
  } catch (const CLI::ParseError& error) {
    int code = app.exit(error, out, err);
    outcome.exit_code = code == 0 ? 0 : 2;
    outcome.out = out.str();
    outcome.err = err.str();
    return outcome;
  }
  if (against_option->count() > 0) command.verify.against = against;
  if (json->count() > 0) command.json_path = json_value.empty() ? "-" : json_value;
  if (html->count() > 0) {
    command.html_path = html_value;
    command.verify.trace = true;
  }
  outcome.command = std::move(command);
  return outcome;
}

Status CheckReportPlacement(const CommandLine& command) {
  // Checked first: the second report written would replace the first, which
  // the other checks would then call a report of the wrong kind.
  if (command.html_path && command.json_path && *command.json_path != "-" &&
      NameTheSameFile(*command.json_path, *command.html_path))
    return Status::Error(kUsageError, "--json=" + *command.json_path + " and --html=" + *command.html_path +
                                            " name the same file; give each report its own");
  if (command.json_path && *command.json_path != "-")
    DMLP_RETURN_IF_ERROR(CheckReportTarget("--json=", *command.json_path, RunDirs(command), IsJsonReport));
  if (command.html_path && !command.html_optional) DMLP_RETURN_IF_ERROR(CheckHtmlTarget(command));
  return Status::Ok();
}

Status CheckHtmlTarget(const CommandLine& command) {
  return CheckReportTarget("--html=", *command.html_path, RunDirs(command), IsHtmlReport);
}

}  // namespace dmlp::verify
