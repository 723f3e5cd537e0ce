// defines: LaunchOptions, CommandLine, RankFilter, LaunchConfig, ParseCommandLine, ParseRankFilter,
//          ResolveConfig
//
// `dmlp-launch [options] [--] [COMMAND [ARGS...]]`: the command line as typed
// (LaunchOptions, CLI11 only splits it), then checked strictly against the
// environment into a LaunchConfig that the supervisor runs. Values are kept as
// text until ResolveConfig so every number goes through the same strict parser
// as the rest of dmlp (no "0x10", "+3", "3abc").
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/env.h"
#include "common/status.h"

namespace dmlp {

/// Options exactly as given on the command line.
struct LaunchOptions {
  std::optional<std::string> nproc;    // --nproc N: world size; overrides NUM_PROCESSES
  std::string grace = "30";            // --grace SECONDS: SIGTERM -> SIGKILL delay; 0 kills at once
  std::optional<std::string> log_dir;  // --log-dir DIR: raw rank-R.stdout / rank-R.stderr files
  std::string restarts = "0";          // --restarts N: restart all ranks after a rank failure
  bool restart_on_divergence = false;  // --restart-on-divergence: also after exit code 4 or 5
  std::string nnodes = "1";            // --nnodes K: launchers (hosts) sharing the world
  std::string node_rank = "0";         // --node-rank J: which one this is, 0..K-1
  std::optional<std::string> show_ranks;  // --show-ranks LIST: ranks shown on the console
  std::optional<std::string> stop_with_parent;  // --stop-with-parent PID: our parent's pid
  std::vector<std::string> command;       // COMMAND ARGS...; empty means dmlp-train beside us
};

/// Result of parsing: options, or a text to print on stdout (--help, --version) and exit 0.
struct CommandLine {
  LaunchOptions options;
  std::optional<std::string> print_and_exit;
};

/// Which global ranks' output reaches the console ("0,2-3", "all", "none").
class RankFilter {
 public:
  RankFilter() = default;  // all ranks
  static RankFilter None() { return RankFilter(std::vector<std::pair<int64_t, int64_t>>{}); }
  explicit RankFilter(std::vector<std::pair<int64_t, int64_t>> ranges)
      : all_(false), ranges_(std::move(ranges)) {}
  bool Shows(int64_t rank) const;
  /// Largest rank named, -1 for all/none.
  int64_t MaxRankNamed() const;

 private:
  bool all_ = true;
  std::vector<std::pair<int64_t, int64_t>> ranges_;  // inclusive [first, last]
};

/// Everything the supervisor needs, validated.
struct LaunchConfig {
  int world_size = 1;  // NUM_PROCESSES over all nodes
  int nnodes = 1;
  int node_rank = 0;
  int first_rank = 0;        // global rank of this node's LOCAL_RANK 0
  int local_rank_count = 1;  // ranks started here
  double grace_seconds = 30;
  // Attempts after the first, each started (with RESUME=1) only when a rank of
  // the previous one failed; never after a signal to the launcher.
  int restarts = 0;
  // Also restart after a rank diverged or a shard audit failed (exit code 4 or
  // 5); without it such a failure ends the launch (restart_policy.h says why).
  bool restart_on_divergence = false;
  std::string log_dir;  // empty: no log files
  // --stop-with-parent: the parent whose death stops the job as a SIGTERM
  // would (launch/parent_watch.h); 0 when not asked.
  pid_t watched_parent = 0;
  RankFilter shown_ranks;
  std::vector<std::string> command;  // argv of every rank; command[0] as typed or the default
  Environment environment;           // what ranks inherit, before PROCESS_ID / LOCAL_RANK
};

/// Most ranks one launcher starts (each holds two pipes and maybe two log files).
inline constexpr int kMaxLocalRanks = 4096;
/// Longest --grace accepted, in seconds (a week); keeps deadline arithmetic far from overflow.
inline constexpr double kMaxGraceSeconds = 7 * 24 * 3600.0;
/// Most --restarts accepted: the attempt count (restarts + 1) must fit an int.
inline constexpr int64_t kMaxRestarts = INT32_MAX - 1;

/// Splits argv; USAGE errors for unknown options or missing values.
Result<CommandLine> ParseCommandLine(int argc, const char* const* argv);
/// Parses "all", "none" or a comma list of ranks and ranges ("0,2-3").
Result<RankFilter> ParseRankFilter(const std::string& text);
/// Validates options against `env` (NUM_PROCESSES unless --nproc); `default_command`
/// replaces an empty COMMAND. Errors: OPTION_INVALID, CONFIG_INVALID, ENV_*.
Result<LaunchConfig> ResolveConfig(const LaunchOptions& options, const Environment& env,
                                   const std::string& default_command);

}  // namespace dmlp
