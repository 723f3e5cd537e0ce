// dmlp-train: one rank of the job. Configuration from the environment
// (optionally under a YAML --config file); see docs/configuration.md for every variable.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include <CLI/CLI.hpp>

#include "common/build_info.h"
#include "common/env.h"
#include "common/format/error_codes.h"
#include "common/std_streams.h"
#include "trainer/nccl_defaults.h"
#include "trainer/output/termination_cleanup.h"
#include "trainer/plan.h"
#include "trainer/trainer.h"
#include "trainer/user_signals.h"

int main(int argc, char** argv) {
  // First, before any thread exists: SIGUSR1/2 are logged, never fatal.
  dmlp::BlockUserSignals();
  // Before anything is opened: a closed stdout or stderr must not lend its
  // number to a socket, and a reader that goes away must not kill the rank
  // between two files (common/std_streams.h).
  dmlp::PrepareStandardStreams();
  // A file-size limit must fail a write with EFBIG (reported, nothing half
  // written) rather than kill the rank with SIGXFSZ.
  std::signal(SIGXFSZ, SIG_IGN);
  // A teardown before the first step must not leave empty receipt files.
  dmlp::InstallTerminationCleanup();
  CLI::App app{"dmlp-train: one rank of a reproducible data-parallel MLP training job"};
  std::string config_path;
  app.add_option("--config", config_path, "YAML file of lower-case keys; the environment overrides it");
  app.set_version_flag("--version", dmlp::VersionText("dmlp-train"));
  app.footer("Every variable, the YAML file and which wins: docs/configuration.md (in dmlp's sources).");
  // CLI11_PARSE would exit with CLI11's own codes (109, 114, ...); usage is 2.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    if (error.get_exit_code() == 0) return app.exit(error);  // --help, --version
    std::fprintf(stderr, "dmlp-train: error: %s: %s (see --help)\n", dmlp::kUsage, error.what());
    return dmlp::ExitCodeFor(dmlp::Status::Error(dmlp::kUsage));
  }
  if (app.count("--config") > 0 && config_path.empty()) {
    std::fprintf(stderr, "dmlp-train: error: %s: --config names no file\n", dmlp::kConfigInvalid);
    return dmlp::ExitCodeFor(dmlp::Status::Error(dmlp::kConfigInvalid));
  }

  dmlp::Environment env = dmlp::Environment::FromProcess();
  if (!config_path.empty()) {
    dmlp::Result<dmlp::Environment> file = dmlp::LoadConfigFile(config_path);
    if (!file.ok()) {
      std::fprintf(stderr, "dmlp-train: error: %s\n", file.status().ToString().c_str());
      return 2;
    }
    env.FillFrom(*file);
  }
  // Also called from the peer monitor's thread, as a last resort (trainer/rendezvous/last_resort.h).
  std::atomic<bool> reported{false};
  auto report = [&](const dmlp::Status& status) {
    std::fprintf(stderr, "dmlp-train: error: %s\n", status.ToString().c_str());
    std::fflush(stderr);
    reported = true;
  };
  dmlp::Status status;
  try {
    dmlp::Result<dmlp::Plan> plan = dmlp::ReadPlan(env);
    // Before the first thread of the process (nccl_defaults.h).
    if (plan.ok()) dmlp::DefaultToFreezableTransports(*plan);
    status = plan.ok() ? dmlp::RunTrainer(*plan, report) : plan.status();
  } catch (const std::bad_alloc&) {
    // The plan's memory check (trainer/memory_plan.h) leaves this to memory
    // that went elsewhere meanwhile: a clean error, not SIGABRT.
    status = dmlp::Status::Error(dmlp::kOutOfMemory, "an allocation failed; the plan's estimate "
                                                  "fitted, so memory ran out elsewhere");
  } catch (const std::exception& error) {
    // A last resort: failures are Status values (threads: common/thread_start.h),
    // but one that escapes as an exception still unwinds, so the destructors
    // clean up what a refused start created, instead of std::terminate's abort.
    status = dmlp::Status::Error(dmlp::kInternal, std::string("uncaught exception: ") + error.what());
  }
  if (status.ok()) return 0;
  if (!reported) report(status);
  return dmlp::ExitCodeFor(status);
}
