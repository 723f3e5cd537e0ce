#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "common/build_info.h"
#include "launch/launch_errors.h"
#include "launch/options.h"

namespace dmlp {
namespace {

Result<CommandLine> Parse(std::vector<const char*> args) {
  args.insert(args.begin(), "dmlp-launch");
  return ParseCommandLine(static_cast<int>(args.size()), args.data());
}

Result<LaunchConfig> Resolve(std::vector<const char*> args,
                             Environment::Map env = {{"NUM_PROCESSES", "4"}}) {
  Result<CommandLine> parsed = Parse(std::move(args));
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return ResolveConfig(parsed->options, Environment(std::move(env)), "/opt/dmlp/bin/dmlp-train");
}

std::string ErrorOf(std::vector<const char*> args,
                    Environment::Map env = {{"NUM_PROCESSES", "4"}}) {
  Result<LaunchConfig> config = Resolve(std::move(args), std::move(env));
  return config.ok() ? "OK" : config.status().ToString();
}

TEST(LaunchOptions, RanksGetANewJobIdUnlessOneIsSetOrNodesAreSeveral) {
  Result<LaunchConfig> first = Resolve({});
  Result<LaunchConfig> second = Resolve({});
  ASSERT_TRUE(first.ok() && second.ok());
  std::optional<std::string> id = first->environment.Get("DMLP_JOB_ID");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->size(), 32u);
  EXPECT_EQ(id->find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(id, second->environment.Get("DMLP_JOB_ID"));  // two launches, two jobs
  Result<LaunchConfig> given = Resolve({}, {{"NUM_PROCESSES", "4"}, {"DMLP_JOB_ID", "mine"}});
  EXPECT_EQ(given->environment.Get("DMLP_JOB_ID"), "mine");
  // Launchers on other nodes could not know a made-up id: the ranks fall back to the engine's.
  Result<LaunchConfig> nodes = Resolve({"--nnodes", "2", "--node-rank", "1"});
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  EXPECT_FALSE(nodes->environment.Get("DMLP_JOB_ID").has_value());
}

TEST(LaunchOptions, DefaultsComeFromTheEnvironmentAndTheDefaultCommand) {
  Result<LaunchConfig> config = Resolve({});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->world_size, 4);
  EXPECT_EQ(config->local_rank_count, 4);
  EXPECT_EQ(config->first_rank, 0);
  EXPECT_EQ(config->grace_seconds, 30);
  EXPECT_EQ(config->log_dir, "");
  EXPECT_EQ(config->command, std::vector<std::string>{"/opt/dmlp/bin/dmlp-train"});
  EXPECT_TRUE(config->shown_ranks.Shows(3));
  EXPECT_EQ(config->environment.Get("NUM_PROCESSES"), "4");
}

TEST(LaunchOptions, CommandAndItsOwnOptionsAreLeftAlone) {
  Result<LaunchConfig> config =
      Resolve({"--grace", "1.5", "python3", "-u", "train.py", "--nproc", "9"});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->grace_seconds, 1.5);
  EXPECT_EQ(config->world_size, 4);
  EXPECT_EQ(config->command,
            (std::vector<std::string>{"python3", "-u", "train.py", "--nproc", "9"}));
}

TEST(LaunchOptions, DoubleDashStartsTheCommand) {
  Result<LaunchConfig> config = Resolve({"--nproc=2", "--", "-strange", "--grace"});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->command, (std::vector<std::string>{"-strange", "--grace"}));
  EXPECT_EQ(config->world_size, 2);
}

TEST(LaunchOptions, NprocOverridesAndIsPassedToRanks) {
  Result<LaunchConfig> config = Resolve({"--nproc", "8"}, {{"NUM_PROCESSES", "garbage"}});
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->world_size, 8);
  EXPECT_EQ(config->environment.Get("NUM_PROCESSES"), "8");
}

TEST(LaunchOptions, NumProcessesIsStrict) {
  EXPECT_EQ(ErrorOf({}, {}), "ENV_MISSING: NUM_PROCESSES");
  EXPECT_EQ(ErrorOf({}, {{"NUM_PROCESSES", ""}}), "ENV_EMPTY: NUM_PROCESSES");
  EXPECT_EQ(ErrorOf({}, {{"NUM_PROCESSES", "two"}}),
            "ENV_INVALID: NUM_PROCESSES='two' is not an integer");
  EXPECT_EQ(ErrorOf({}, {{"NUM_PROCESSES", "0"}}), "ENV_INVALID: NUM_PROCESSES='0' must be >= 1");
  EXPECT_EQ(ErrorOf({}, {{"NUM_PROCESSES", "-1"}}),
            "ENV_INVALID: NUM_PROCESSES='-1' is not an integer");
  EXPECT_EQ(ErrorOf({}, {{"NUM_PROCESSES", "4x"}}),
            "ENV_INVALID: NUM_PROCESSES='4x' is not an integer");
  EXPECT_EQ(ErrorOf({}, {{"NUM_PROCESSES", " 4"}}),
            "ENV_INVALID: NUM_PROCESSES=' 4' is not an integer");
  EXPECT_EQ(ErrorOf({}, {{"NUM_PROCESSES", "99999999999999999999"}}),
            "ENV_INVALID: NUM_PROCESSES='99999999999999999999' is out of range");
}

TEST(LaunchOptions, OptionValuesAreStrict) {
  EXPECT_EQ(ErrorOf({"--nproc", "0x10"}), "OPTION_INVALID: --nproc='0x10' is not an integer");
  EXPECT_EQ(ErrorOf({"--nproc", "0"}), "OPTION_INVALID: --nproc='0' must be >= 1");
  EXPECT_EQ(ErrorOf({"--grace", "soon"}),
            "OPTION_INVALID: --grace='soon' is not a number of seconds");
  EXPECT_EQ(ErrorOf({"--grace", "-1"}),
            "OPTION_INVALID: --grace='-1' must be between 0 and 604800");
  EXPECT_EQ(ErrorOf({"--grace", "inf"}),
            "OPTION_INVALID: --grace='inf' is not a number of seconds");
  EXPECT_EQ(ErrorOf({"--grace", "0x1p3"}), "OPTION_INVALID: --grace='0x1p3' is not a number of seconds");
  EXPECT_EQ(ErrorOf({"--grace", "+5"}), "OPTION_INVALID: --grace='+5' is not a number of seconds");
  EXPECT_EQ(ErrorOf({"--grace", "0"}), "OK");
  EXPECT_EQ(ErrorOf({"--grace", "2.5e1"}), "OK");
  EXPECT_EQ(ErrorOf({"--nnodes", "0"}), "OPTION_INVALID: --nnodes='0' must be >= 1");
  EXPECT_EQ(ErrorOf({"--log-dir", ""}), "OPTION_INVALID: --log-dir is empty");
}

TEST(LaunchOptions, UnknownOptionsAndMissingValuesAreUsageErrors) {
  Result<CommandLine> unknown = Parse({"--bogus", "cmd"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), "USAGE");
  EXPECT_EQ(unknown.status().detail(),
            "unknown option --bogus (put -- before a COMMAND that starts with '-')");
  Result<CommandLine> missing = Parse({"--grace"});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), "USAGE");
}

TEST(LaunchOptions, HelpAndVersionArePrintedNotRun) {
  Result<CommandLine> help = Parse({"--help"});
  ASSERT_TRUE(help.ok());
  ASSERT_TRUE(help->print_and_exit.has_value());
  EXPECT_NE(help->print_and_exit->find("Usage: dmlp-launch [options] [--] [COMMAND [ARGS...]]"),
            std::string::npos);
  EXPECT_NE(help->print_and_exit->find("--grace"), std::string::npos);
  Result<CommandLine> version = Parse({"--version"});
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version->print_and_exit, VersionText("dmlp-launch") + "\n");
  EXPECT_EQ(version->print_and_exit->rfind(std::string("dmlp-launch ") + DMLP_VERSION + "\ncommit: ", 0), 0u);
}

TEST(LaunchOptions, RestartsAreStrict) {
  Result<LaunchConfig> none = Resolve({});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->restarts, 0);
  Result<LaunchConfig> two = Resolve({"--restarts", "2"});
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(two->restarts, 2);
  EXPECT_EQ(Resolve({"--restarts=2147483646"})->restarts, 2147483646);
  EXPECT_EQ(ErrorOf({"--restarts", "-1"}), "OPTION_INVALID: --restarts='-1' is not an integer");
  EXPECT_EQ(ErrorOf({"--restarts", "1.5"}), "OPTION_INVALID: --restarts='1.5' is not an integer");
  EXPECT_EQ(ErrorOf({"--restarts", "2147483647"}),
            "OPTION_INVALID: --restarts='2147483647' must be <= 2147483646");
  Result<CommandLine> help = Parse({"--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_NE(help->print_and_exit->find("--restarts"), std::string::npos);
}

TEST(LaunchOptions, RestartOnDivergenceIsAFlag) {
  EXPECT_FALSE(Resolve({"--restarts", "2"})->restart_on_divergence);
  Result<LaunchConfig> asked = Resolve({"--restarts", "2", "--restart-on-divergence"});
  ASSERT_TRUE(asked.ok()) << asked.status().ToString();
  EXPECT_TRUE(asked->restart_on_divergence);
  // After COMMAND it belongs to the command.
  Result<LaunchConfig> command = Resolve({"--restarts", "2", "sh", "--restart-on-divergence"});
  ASSERT_TRUE(command.ok()) << command.status().ToString();
  EXPECT_FALSE(command->restart_on_divergence);
  EXPECT_EQ(command->command, (std::vector<std::string>{"sh", "--restart-on-divergence"}));
  Result<CommandLine> help = Parse({"--help"});
  ASSERT_TRUE(help.ok());
  EXPECT_NE(help->print_and_exit->find("--restart-on-divergence"), std::string::npos);
}

TEST(LaunchOptions, NodesSplitTheWorld) {
  Result<LaunchConfig> second = Resolve({"--nnodes", "2", "--node-rank", "1"});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->first_rank, 2);
  EXPECT_EQ(second->local_rank_count, 2);
  EXPECT_EQ(second->world_size, 4);
  EXPECT_EQ(ErrorOf({"--nnodes", "3"}),
            "CONFIG_INVALID: --nnodes 3 does not divide NUM_PROCESSES 4");
  EXPECT_EQ(ErrorOf({"--nnodes", "2", "--node-rank", "2"}),
            "CONFIG_INVALID: --node-rank 2 must be below --nnodes 2");
  EXPECT_EQ(ErrorOf({"--node-rank", "1"}),
            "CONFIG_INVALID: --node-rank 1 must be below --nnodes 1");
  EXPECT_EQ(ErrorOf({"--nproc", "5000"}),
            "CONFIG_INVALID: 5000 ranks on one node; dmlp-launch starts at most 4096");
  EXPECT_EQ(ErrorOf({"--nproc", "8000", "--nnodes", "2"}), "OK");
}

TEST(LaunchOptions, StopWithParentIsAStrictPid) {
  Result<LaunchConfig> none = Resolve({});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->watched_parent, 0);
  Result<LaunchConfig> given = Resolve({"--stop-with-parent", "4242", "--", "true"});
  ASSERT_TRUE(given.ok()) << given.status().ToString();
  EXPECT_EQ(given->watched_parent, 4242);
  EXPECT_EQ(given->command, std::vector<std::string>{"true"});
  EXPECT_EQ(ErrorOf({"--stop-with-parent", "0"}), "OPTION_INVALID: --stop-with-parent='0' must be >= 1");
  EXPECT_EQ(ErrorOf({"--stop-with-parent", "12x"}),
            "OPTION_INVALID: --stop-with-parent='12x' is not an integer");
}

TEST(RankFilter, ParsesListsAndRanges) {
  Result<RankFilter> filter = ParseRankFilter("0,2-3,7");
  ASSERT_TRUE(filter.ok());
  std::vector<bool> shown;
  for (int rank = 0; rank < 9; ++rank) shown.push_back(filter->Shows(rank));
  EXPECT_EQ(shown, (std::vector<bool>{true, false, true, true, false, false, false, true, false}));
  EXPECT_EQ(filter->MaxRankNamed(), 7);
  EXPECT_TRUE(ParseRankFilter("all")->Shows(100));
  EXPECT_FALSE(ParseRankFilter("none")->Shows(0));
  for (const char* bad : {"", "1,", "a", "3-1", "-1", "1-", "1--2", "+1"})
    EXPECT_EQ(ParseRankFilter(bad).status().code(), "OPTION_INVALID") << bad;
  EXPECT_EQ(ErrorOf({"--show-ranks", "4"}),
            "OPTION_INVALID: --show-ranks names rank 4 but NUM_PROCESSES is 4");
}

TEST(LaunchErrors, ExitCodes) {
  EXPECT_EQ(ExitCodeForError(Status::Error("ENV_MISSING", "NUM_PROCESSES")), 2);
  EXPECT_EQ(ExitCodeForError(Status::Error("ENV_INVALID", "x")), 2);
  EXPECT_EQ(ExitCodeForError(Status::Error(kUsage, "x")), 2);
  EXPECT_EQ(ExitCodeForError(Status::Error(kConfigInvalid, "x")), 2);
  EXPECT_EQ(ExitCodeForError(Status::Error(kLogDirFailed, "x")), 2);
  EXPECT_EQ(ExitCodeForError(Status::Error(kCommandNotFound, "x")), 127);
  EXPECT_EQ(ExitCodeForError(Status::Error(kCommandNotExecutable, "x")), 126);
  EXPECT_EQ(ExitCodeForError(Status::Error(kSpawnFailed, "x")), 125);
  EXPECT_EQ(ExitCodeForError(Status::Error(kInternal, "x")), 125);
  EXPECT_EQ(ExitCodeForError(Status::Error(kParentGone, "x")), 125);
}

}  // namespace
}  // namespace dmlp
