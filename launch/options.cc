#include "launch/options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdint>
#include <sstream>

#include "common/build_info.h"
#include "common/number_grammar.h"
#include "common/quote.h"
#include "launch/job_id.h"
#include "launch/launch_errors.h"

namespace dmlp {
namespace {

constexpr char kDescription[] =
    "Starts NUM_PROCESSES ranks of COMMAND (default: dmlp-train beside dmlp-launch), each in\n"
    "its own process group with PROCESS_ID and LOCAL_RANK set (and one DMLP_JOB_ID for the\n"
    "job unless it is set or --nnodes > 1), prefixes their output with\n"
    "[rank R], and ends the whole job when the first rank fails: SIGTERM to every rank,\n"
    "SIGKILL after the grace period, exit with the failed rank's code (128+signal).\n"
    "With --restarts N the whole job is then started again with RESUME=1, up to N times;\n"
    "a signal to dmlp-launch (SIGINT, SIGTERM, SIGHUP, SIGQUIT) is never followed by a restart,\n"
    "and the exit code is the last attempt's. A rank that diverged (exit code 4, RANK_DIVERGED)\n"
    "or failed a shard audit (5) is not restarted unless --restart-on-divergence is given: the\n"
    "restart would replay the same steps; a repeat at the same step names the suspect host.\n"
    "Exit codes: 0 all ranks 0; rank's code; 2 configuration; 125 internal;\n"
    "126 command not executable; 127 command not found.";

// Strict option integer: the option name goes into the message, as ENV_INVALID does for variables.
Result<int64_t> OptionInteger(const std::string& name, const std::string& text, int64_t min,
                              int64_t max) {
  Result<int64_t> value = ParseInteger(text, min, max);
  if (!value.ok())
    return Status::Error(kOptionInvalid, name + "=" + QuoteValue(text) + " " + value.status().detail());
  return value;
}

Result<double> GraceSeconds(const std::string& text) {
  Result<double> value = ParseFiniteDouble(text);
  if (!value.ok())
    return Status::Error(kOptionInvalid, "--grace=" + QuoteValue(text) + " is not a number of seconds");
  if (*value < 0 || *value > kMaxGraceSeconds)
    return Status::Error(kOptionInvalid,
                         "--grace=" + QuoteValue(text) + " must be between 0 and " +
                             std::to_string(static_cast<int64_t>(kMaxGraceSeconds)));
  return value;
}

// CLI11 would print "Usage: dmlp-launch [OPTIONS]" and hide the COMMAND part.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: dmlp-launch [options] [--] [COMMAND [ARGS...]]\n";
  }
};

}  // namespace

bool RankFilter::Shows(int64_t rank) const {
  if (all_) return true;
  return std::any_of(ranges_.begin(), ranges_.end(), [rank](const auto& range) {
    return range.first <= rank && rank <= range.second;
  });
}

int64_t RankFilter::MaxRankNamed() const {
  int64_t max_rank = -1;
  for (const auto& range : ranges_) max_rank = std::max(max_rank, range.second);
  return max_rank;
}

Result<RankFilter> ParseRankFilter(const std::string& text) {
  if (text == "all") return RankFilter();
  if (text == "none") return RankFilter::None();
  std::vector<std::pair<int64_t, int64_t>> ranges;
  std::stringstream items(text);
  std::string item;
  auto invalid = [&](const std::string& why) {
    return Status::Error(kOptionInvalid, "--show-ranks=" + QuoteValue(text) + " " + why);
  };
  if (text.empty() || text.back() == ',') return invalid("is not a list like 0,2-3, all or none");
  while (std::getline(items, item, ',')) {
    size_t dash = item.find('-');
    std::string first_text = item.substr(0, dash);
    std::string last_text = dash == std::string::npos ? first_text : item.substr(dash + 1);
    Result<int64_t> first = ParseInteger(first_text, 0, INT32_MAX);
    Result<int64_t> last = ParseInteger(last_text, 0, INT32_MAX);
    if (!first.ok() || !last.ok()) return invalid("is not a list like 0,2-3, all or none");
    if (*last < *first) return invalid("has a range that runs backwards: " + item);
    ranges.emplace_back(*first, *last);
  }
  return RankFilter(std::move(ranges));
}

Result<CommandLine> ParseCommandLine(int argc, const char* const* argv) {
  CommandLine parsed;
  LaunchOptions& options = parsed.options;
  CLI::App app{kDescription, "dmlp-launch"};
  app.formatter(std::make_shared<UsageFormatter>());
  app.footer("Restarts, divergence, lost peers and signals: docs/reliability.md (in dmlp's sources).");
  std::string nproc, log_dir, show_ranks, stop_with_parent;
  app.add_option("--nproc", nproc, "World size (all nodes); default: NUM_PROCESSES")
      ->type_name("N");
  app.add_option("--grace", options.grace,
                 "Seconds between SIGTERM and SIGKILL at teardown; 0 kills at once (default 30)")
      ->type_name("SECONDS");
  app.add_option("--restarts", options.restarts,
                 "After a rank fails and the job is torn down, start all ranks again with "
                 "RESUME=1, up to N times (default 0)")
      ->type_name("N");
  app.add_flag("--restart-on-divergence", options.restart_on_divergence,
               "With --restarts: also restart after a rank diverged or a shard audit failed "
               "(exit code 4 or 5); a repeat at the same step and rank(s) is named as a "
               "hardware suspect");
  app.add_option("--log-dir", log_dir,
                 "Also keep raw rank-R.stdout / rank-R.stderr files here; attempt k >= 2 of "
                 "--restarts writes rank-R.attempt-k.stdout / .stderr")
      ->type_name("DIR");
  app.add_option("--nnodes", options.nnodes,
                 "Number of launchers (hosts) sharing the world (default 1)")
      ->type_name("K");
  app.add_option("--node-rank", options.node_rank,
                 "This launcher's index 0..K-1; it starts ranks J*N/K .. (J+1)*N/K-1 (default 0)")
      ->type_name("J");
  app.add_option("--show-ranks", show_ranks,
                 "Ranks whose output is shown on the console: 0,2-3, all (default) or none; "
                 "log files keep every rank")
      ->type_name("LIST");
  app.add_option("--stop-with-parent", stop_with_parent,
                 "PID of dmlp-launch's parent (a wrapper such as run.sh): when it dies, even "
                 "by SIGKILL, the job is stopped as by SIGTERM instead of running on unwatched")
      ->type_name("PID");
  app.set_version_flag("--version", VersionText("dmlp-launch"));
  // Everything from the first non-option word on belongs to COMMAND.
  app.prefix_command();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    parsed.print_and_exit = app.help();
    return parsed;
  } catch (const CLI::CallForVersion& version) {
    parsed.print_and_exit = std::string(version.what()) + "\n";
    return parsed;
  } catch (const CLI::ParseError& error) {
    return Status::Error(kUsage, error.what());
  }
  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && !rest.front().empty() && rest.front().front() == '-') {
    return Status::Error(kUsage, "unknown option " + rest.front() +
                                     " (put -- before a COMMAND that starts with '-')");
  }
  options.command = std::move(rest);
  if (app.count("--nproc") > 0) options.nproc = nproc;
  if (app.count("--log-dir") > 0) options.log_dir = log_dir;
  if (app.count("--show-ranks") > 0) options.show_ranks = show_ranks;
  if (app.count("--stop-with-parent") > 0) options.stop_with_parent = stop_with_parent;
  return parsed;
}

Result<LaunchConfig> ResolveConfig(const LaunchOptions& options, const Environment& env,
                                   const std::string& default_command) {
  LaunchConfig config;
  int64_t world_size = 0;
  if (options.nproc) {
    DMLP_ASSIGN_OR_RETURN(world_size, OptionInteger("--nproc", *options.nproc, 1, INT32_MAX));
  } else {
    DMLP_ASSIGN_OR_RETURN(world_size, RequireInteger(env, "NUM_PROCESSES", 1));
  }
  DMLP_ASSIGN_OR_RETURN(int64_t nnodes, OptionInteger("--nnodes", options.nnodes, 1, INT32_MAX));
  DMLP_ASSIGN_OR_RETURN(int64_t node_rank,
                        OptionInteger("--node-rank", options.node_rank, 0, INT32_MAX));
  DMLP_ASSIGN_OR_RETURN(config.grace_seconds, GraceSeconds(options.grace));
  DMLP_ASSIGN_OR_RETURN(int64_t restarts,
                        OptionInteger("--restarts", options.restarts, 0, kMaxRestarts));
  config.restarts = static_cast<int>(restarts);
  config.restart_on_divergence = options.restart_on_divergence;
  if (node_rank >= nnodes)
    return Status::Error(kConfigInvalid, "--node-rank " + std::to_string(node_rank) +
                                             " must be below --nnodes " + std::to_string(nnodes));
  if (world_size % nnodes != 0)
    return Status::Error(kConfigInvalid, "--nnodes " + std::to_string(nnodes) +
                                             " does not divide NUM_PROCESSES " +
                                             std::to_string(world_size));
  int64_t local_count = world_size / nnodes;
  if (local_count > kMaxLocalRanks)
    return Status::Error(kConfigInvalid, std::to_string(local_count) +
                                             " ranks on one node; dmlp-launch starts at most " +
                                             std::to_string(kMaxLocalRanks));
  if (options.show_ranks) {
    DMLP_ASSIGN_OR_RETURN(config.shown_ranks, ParseRankFilter(*options.show_ranks));
    if (config.shown_ranks.MaxRankNamed() >= world_size)
      return Status::Error(kOptionInvalid, "--show-ranks names rank " +
                                               std::to_string(config.shown_ranks.MaxRankNamed()) +
                                               " but NUM_PROCESSES is " +
                                               std::to_string(world_size));
  }
  if (options.stop_with_parent) {
    DMLP_ASSIGN_OR_RETURN(int64_t parent, OptionInteger("--stop-with-parent",
                                                        *options.stop_with_parent, 1, INT32_MAX));
    config.watched_parent = static_cast<pid_t>(parent);
  }
  if (options.log_dir) {
    if (options.log_dir->empty()) return Status::Error(kOptionInvalid, "--log-dir is empty");
    config.log_dir = *options.log_dir;
  }
  config.world_size = static_cast<int>(world_size);
  config.nnodes = static_cast<int>(nnodes);
  config.node_rank = static_cast<int>(node_rank);
  config.local_rank_count = static_cast<int>(local_count);
  config.first_rank = static_cast<int>(node_rank * local_count);
  config.command = options.command;
  if (config.command.empty()) config.command.push_back(default_command);
  if (config.command.front().empty()) return Status::Error(kUsage, "COMMAND is empty");
  config.environment = env;
  // Ranks read the world size from NUM_PROCESSES; --nproc must reach them too.
  config.environment.Set("NUM_PROCESSES", std::to_string(world_size));
  // One id for every attempt of this launch (restarts are the same job).
  DMLP_RETURN_IF_ERROR(SetJobIdentity(config.environment, config.nnodes));
  return config;
}

}  // namespace dmlp
