// Whole runs through the library: verdicts, rank groups, --against, and hostile
// directories (FIFOs, symlinks, directories where files should be).
#include "verify/verifier.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "tests/unit/verify_test_util.h"

namespace dmlp::verify {
namespace {

using testing::RankLine;
using testing::TempDir;

Report MustVerify(const std::string& dir, std::optional<std::string> against = std::nullopt,
                  bool allow_incomplete = false) {
  Result<Report> report = Verify(VerifyOptions{dir, std::move(against), allow_incomplete});
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? std::move(report).value() : Report{};
}

TEST(VerifyRunTest, CompleteReferenceRunPasses) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 3, 5);
  Report report = MustVerify(dir.path());
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(report.verdict, Verdict::kPass);
  EXPECT_EQ(testing::FindingIds(report), (std::set<std::string>{"state.absent"}));
  EXPECT_EQ(report.run.format, "reference");
  EXPECT_EQ(report.run.receipts.ranks.size(), 3u);
  EXPECT_EQ(report.run.receipts.last_step, 5);
}

TEST(VerifyRunTest, IncompleteAndAllowIncomplete) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 4, /*with_result=*/false);
  EXPECT_EQ(MustVerify(dir.path()).exit_code, 3);
  Report allowed = MustVerify(dir.path(), std::nullopt, true);
  EXPECT_EQ(allowed.exit_code, 0);
  EXPECT_EQ(allowed.verdict, Verdict::kIncomplete);
}

TEST(VerifyRunTest, DivergenceGroupsByValue) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 4, 5, false);
  for (int rank : {1, 3}) {
    std::string lines;
    for (int step = 1; step <= 5; ++step) lines += RankLine(step, rank, step >= 3 ? 1 : 0);
    dir.Write("rank-" + std::to_string(rank) + ".jsonl", lines);
  }
  Report report = MustVerify(dir.path());
  EXPECT_EQ(report.exit_code, 1);
  ASSERT_TRUE(report.first_divergence);
  EXPECT_EQ(report.first_divergence->step, 3);
  EXPECT_EQ(report.first_divergence->between, "ranks");
  EXPECT_EQ(report.first_divergence->groups, (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(report.findings.Count("ranks.hash_divergence"), 1u);
  EXPECT_EQ(report.run.receipts.divergent_steps, 3);
}

TEST(VerifyRunTest, AgainstComparesByStep) {
  TempDir a, b, c, d;
  testing::WriteReferenceRun(a, 2, 5);
  testing::WriteReferenceRun(b, 4, 5);
  EXPECT_EQ(MustVerify(a.path(), b.path()).exit_code, 0);
  testing::WriteReferenceRun(c, 2, 3);
  Report prefix = MustVerify(a.path(), c.path());
  EXPECT_EQ(prefix.exit_code, 1);
  EXPECT_EQ(testing::FindingIds(prefix).count("against.prefix"), 1u);
  testing::WriteReferenceRun(d, 1, 5);
  d.Write("rank-0.jsonl", RankLine(1, 0) + RankLine(2, 0) + RankLine(3, 0, 1) + RankLine(4, 0) + RankLine(5, 0));
  d.Write("metrics.jsonl", testing::MetricsLine(1) + testing::MetricsLine(2) + testing::MetricsLine(3, 1) +
                               testing::MetricsLine(4) + testing::MetricsLine(5));
  Report differs = MustVerify(a.path(), d.path());
  EXPECT_EQ(differs.exit_code, 1);
  EXPECT_EQ(testing::FindingIds(differs), (std::set<std::string>{"state.absent", "against.differs"}));
  ASSERT_TRUE(differs.first_divergence);
  EXPECT_EQ(differs.first_divergence->between, "runs");
  EXPECT_EQ(differs.first_divergence->step, 3);
  // The reference's format records no build: comparability unknown, held to matching.
  ASSERT_TRUE(differs.against_verdict);
  EXPECT_EQ(differs.against_verdict->comparability.kind, Comparability::Kind::kUnknown);
  EXPECT_EQ(differs.against_verdict->comparison.outcome, RunComparison::Outcome::kDiverged);
  EXPECT_EQ(differs.against_verdict->comparison.what, "both");
}

TEST(VerifyRunTest, AgainstARunStillGoingIsIncompleteNotAFailure) {
  TempDir golden, run;
  testing::WriteReferenceRun(golden, 2, 5);
  testing::WriteReferenceRun(run, 2, 3);
  std::filesystem::remove(run.File("result.json"));
  Report report = MustVerify(run.path(), golden.path());
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_EQ(testing::FindingIds(report), (std::set<std::string>{"result.missing", "state.absent", "against.incomplete"}));
  EXPECT_EQ(report.against_verdict->comparison.outcome, RunComparison::Outcome::kRunShorter);
  EXPECT_EQ(report.against_verdict->comparison.step, 3);
  // GOLDEN still going, RUN finished and longer: the same, the other way round.
  Report reversed = MustVerify(golden.path(), run.path());
  EXPECT_EQ(reversed.exit_code, 3);
  EXPECT_EQ(reversed.against_verdict->comparison.outcome, RunComparison::Outcome::kGoldenShorter);
  // --require-comparable refuses a comparison it cannot vouch for.
  VerifyOptions strict{run.path(), golden.path()};
  strict.require_comparable = true;
  Result<Report> refused = Verify(strict);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->exit_code, 1);
  EXPECT_TRUE(testing::FindingIds(*refused).contains("against.not_comparable"));
}

TEST(VerifyRunTest, UnreadableDirectoryIsTrouble) {
  TempDir dir;
  dir.Write("file", "x");
  EXPECT_EQ(Verify(VerifyOptions{dir.File("missing")}).status().code(), "NOT_FOUND");
  EXPECT_EQ(Verify(VerifyOptions{dir.File("file")}).status().code(), "NOT_A_DIRECTORY");
  Report empty = MustVerify(dir.path());  // a directory is no trouble, whatever it holds
  EXPECT_EQ(empty.exit_code, 3);
  EXPECT_TRUE(testing::FindingIds(empty).contains("ranks.not_started"));
}

// Holds an exclusive flock on DIR/dmlp.lock, as a running job's rank 0 does.
class HeldLock {
 public:
  explicit HeldLock(const TempDir& dir) : fd_(::open(dir.File("dmlp.lock").c_str(), O_RDWR | O_CREAT, 0644)) {
    EXPECT_EQ(::flock(fd_, LOCK_EX | LOCK_NB), 0);
  }
  ~HeldLock() { ::close(fd_); }

 private:
  int fd_;
};

// What MoveReceiptsAside does to one file of a resumed run (trainer/output/replay.h).
void MoveToSuperseded(const TempDir& dir, const std::string& name) {
  std::filesystem::create_directories(dir.File("superseded/1"));
  std::filesystem::rename(dir.File(name), dir.File("superseded/1/" + name));
}

// A healthy job polled before its first receipt used to be FAIL.
TEST(VerifyRunTest, AJobBeforeItsFirstReceiptIsIncompleteNotFail) {
  TempDir dir;
  {
    HeldLock lock(dir);  // the job holds OUT_DIR's lock, no receipt file yet
    Report starting = MustVerify(dir.path());
    EXPECT_EQ(starting.exit_code, 3);
    EXPECT_EQ(testing::FindingIds(starting), (std::set<std::string>{"ranks.not_started", "result.missing"}));
    for (const Finding& finding : starting.findings.kept()) {
      if (finding.id != "ranks.not_started") continue;
      EXPECT_EQ(finding.message, "no receipt file yet; the job holding dmlp.lock (pid " +
                                     std::to_string(::getpid()) + ") has not created them");
    }
    for (const char* name : {"metrics.jsonl", "rank-0.jsonl", "rank-1.jsonl"}) dir.Write(name, "");
    Report created = MustVerify(dir.path());  // files created, no step done
    EXPECT_EQ(created.exit_code, 3);
    EXPECT_EQ(testing::FindingIds(created), (std::set<std::string>{"ranks.no_record", "result.missing"}));
  }
  // The job is gone: empty receipt files are still a job that stopped before step 1.
  EXPECT_EQ(MustVerify(dir.path()).exit_code, 3);
}

// OUT_DIR and dmlp.lock exist before the lock is taken, and every rank creates
// its own receipt file, in no set order: a poll of a healthy start sees either.
// So does a poll of a start that was killed there. Neither contradicts
// anything until result.json says the run finished.
TEST(VerifyRunTest, AStartUpWindowIsIncompleteNotFail) {
  TempDir dir;
  auto verdict = [&](const std::set<std::string>& ids) {
    Report report = MustVerify(dir.path());
    EXPECT_EQ(testing::FindingIds(report), ids);
    return report.exit_code;
  };
  // OUT_DIR made, no lock file yet; then the lock file made, not yet locked.
  EXPECT_EQ(verdict({"ranks.not_started", "result.missing"}), 3);
  dir.Write("dmlp.lock", "");
  EXPECT_EQ(verdict({"ranks.not_started", "result.missing"}), 3);
  const Report unlocked = MustVerify(dir.path());
  for (const Finding& finding : unlocked.findings.kept()) {
    if (finding.id != "ranks.not_started") continue;
    EXPECT_EQ(finding.message,
              "no receipt file and no result.json: a job not started yet, or one stopped before creating them");
  }
  // Rank 1 created its file before rank 0 did, held lock or not, a record in it or not.
  dir.Write("rank-1.jsonl", "");
  EXPECT_EQ(verdict({"ranks.not_created", "ranks.no_record", "result.missing"}), 3);
  {
    HeldLock lock(dir);
    EXPECT_EQ(verdict({"ranks.not_created", "ranks.no_record", "result.missing"}), 3);
  }
  testing::WriteReferenceRun(dir, 3, 2, /*with_result=*/false);
  std::filesystem::remove(dir.File("rank-0.jsonl"));  // and a stopped start removed rank 0's
  std::filesystem::remove(dir.File("rank-2.jsonl"));
  EXPECT_EQ(verdict({"ranks.not_created", "result.missing"}), 3);
  // Rank 0's files as a stopped start leaves them halfway through its removal.
  for (const char* name : {"rank-0.jsonl", "rank-1.jsonl"}) dir.Write(name, "");
  std::filesystem::remove(dir.File("metrics.jsonl"));
  EXPECT_EQ(verdict({"ranks.no_record", "result.missing"}), 3);
}

// result.json is written last, once every rank recorded every step: beside
// it, a missing or empty receipt file contradicts it.
TEST(VerifyRunTest, MissingReceiptsBesideAResultAreFail) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 3, 2);
  std::filesystem::remove(dir.File("rank-1.jsonl"));
  Report missing = MustVerify(dir.path());
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(testing::FindingIds(missing).contains("ranks.missing_file"));
  EXPECT_FALSE(testing::FindingIds(missing).contains("ranks.not_created"));
  for (const char* name : {"metrics.jsonl", "rank-0.jsonl", "rank-2.jsonl"}) std::filesystem::remove(dir.File(name));
  Report none = MustVerify(dir.path());
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_TRUE(testing::FindingIds(none).contains("ranks.none"));
  // Rank 0 recorded steps and metrics.jsonl is gone: the run's own record is missing.
  testing::WriteReferenceRun(dir, 2, 2, /*with_result=*/false);
  std::filesystem::remove(dir.File("metrics.jsonl"));
  EXPECT_TRUE(testing::FindingIds(MustVerify(dir.path())).contains("metrics.missing"));
}

TEST(VerifyRunTest, EmptyReceiptsBesideAResultAreStillFail) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 3);
  for (const char* name : {"metrics.jsonl", "rank-0.jsonl", "rank-1.jsonl"}) dir.Write(name, "");
  Report report = MustVerify(dir.path());
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_TRUE(testing::FindingIds(report).contains("ranks.none"));
}

// RESUME=1 renames the receipts into superseded/<n> while a
// verifier reads; the listing it made is then wrong. Here the move happens in
// two halves, each right after a listing, as a real resume's may.
TEST(VerifyRunTest, ReceiptsRenamedMidReadAreReadAgainNotFail) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 3, /*with_result=*/false);
  HeldLock lock(dir);
  auto move_aside = [&](const char* name) { MoveToSuperseded(dir, name); };
  std::vector<int> passes;
  VerifyOptions options{dir.path()};
  options.after_listing = [&](int pass) {
    passes.push_back(pass);
    if (pass == 1) {
      move_aside("metrics.jsonl");
      move_aside("rank-0.jsonl");
    }
    if (pass == 2) move_aside("rank-1.jsonl");
  };
  Result<Report> report = Verify(options);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(passes, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(report->exit_code, 3);
  EXPECT_EQ(testing::FindingIds(*report), (std::set<std::string>{"ranks.not_started", "result.missing"}));
}

// A pass can fit between two renames of one move and see the same listing
// before and after: in a live run an error is only kept when seen again.
TEST(VerifyRunTest, AnErrorInALiveRunIsConfirmedAfterAPause) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 3, /*with_result=*/false);
  HeldLock lock(dir);
  auto move_aside = [&](const char* name) { MoveToSuperseded(dir, name); };
  move_aside("metrics.jsonl");  // the move is halfway when the verifier starts
  VerifyOptions options{dir.path()};
  std::vector<int> passes;
  bool moving = true;
  options.after_listing = [&](int pass) {
    passes.push_back(pass);
    if (pass == 2 && moving) {
      move_aside("rank-0.jsonl");
      move_aside("rank-1.jsonl");
    }
  };
  Result<Report> moved = Verify(options);
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(passes, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(moved->exit_code, 3);
  EXPECT_EQ(testing::FindingIds(*moved), (std::set<std::string>{"ranks.not_started", "result.missing"}));
  // An error that stays is an error, live or not.
  moving = false;
  testing::WriteReferenceRun(dir, 2, 3, /*with_result=*/false);
  dir.Write("rank-1.jsonl", RankLine(1, 1) + RankLine(2, 1, 1) + RankLine(3, 1, 1));
  passes.clear();
  Result<Report> broken = Verify(options);
  ASSERT_TRUE(broken.ok());
  EXPECT_EQ(passes, (std::vector<int>{1, 2}));
  EXPECT_EQ(broken->exit_code, 1);
  EXPECT_TRUE(testing::FindingIds(*broken).contains("ranks.hash_divergence"));
}

TEST(VerifyRunTest, ADirectoryThatNeverSettlesIsIncomplete) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 3, /*with_result=*/false);
  VerifyOptions options{dir.path()};
  int renames = 0;
  options.after_listing = [&](int pass) {  // renames after every listing, forever
    if (pass % 2 == 1) std::filesystem::rename(dir.File("rank-1.jsonl"), dir.File("rank-1.jsonl.x"));
    if (pass % 2 == 0) std::filesystem::rename(dir.File("rank-1.jsonl.x"), dir.File("rank-1.jsonl"));
    ++renames;
  };
  Result<Report> report = Verify(options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(renames, 10);
  EXPECT_EQ(report->exit_code, 3);  // not ranks.missing_file, which odd passes saw
  EXPECT_EQ(testing::FindingIds(*report), (std::set<std::string>{"run.changing"}));
}

// One directory twice matches trivially: refused before anything is read.
TEST(VerifyRunTest, AgainstItselfIsAUsageError) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 3);
  Result<Report> itself = Verify(VerifyOptions{dir.path(), dir.path() + "/."});
  ASSERT_FALSE(itself.ok());
  EXPECT_EQ(itself.status().ToString(), "USAGE_ERROR: RUN_DIR " + dir.path() + " and --against " + dir.path() +
                                            "/. are the same directory; compare two runs");
  TempDir other;
  testing::WriteReferenceRun(other, 2, 3);
  EXPECT_EQ(MustVerify(dir.path(), other.path()).exit_code, 0);
}

// The reader opens the state file as /proc/self/fd/N; the finding names the file.
TEST(VerifyRunTest, StateInvalidNamesTheFileNotTheDescriptor) {
  const std::string fixture = std::string(DMLP_SOURCE_DIR) + "/tests/fixtures/state-invalid";
  Report report = MustVerify(fixture);
  ASSERT_TRUE(testing::FindingIds(report).contains("state.invalid"));
  for (const Finding& finding : report.findings.kept()) {
    if (finding.id != "state.invalid") continue;
    EXPECT_EQ(finding.message, "STATE_FILE_INVALID: " + fixture + "/state.safetensors: header length out of range");
  }
}

TEST(VerifyRunTest, NeverFollowsOrBlocksOnSpecialFiles) {
  TempDir outside, dir;
  testing::WriteReferenceRun(outside, 2, 3);
  testing::WriteReferenceRun(dir, 2, 3);
  std::filesystem::remove(dir.File("rank-1.jsonl"));
  ASSERT_EQ(::mkfifo(dir.File("rank-1.jsonl").c_str(), 0600), 0);  // opening it would block
  std::filesystem::remove(dir.File("metrics.jsonl"));
  std::filesystem::create_symlink(outside.File("metrics.jsonl"), dir.File("metrics.jsonl"));
  std::filesystem::create_directory(dir.File("result.json.tmp"));
  Report report = MustVerify(dir.path());
  EXPECT_EQ(report.exit_code, 1);
  EXPECT_EQ(report.findings.Count("file.not_regular"), 2u);
  EXPECT_TRUE(testing::FindingIds(report).contains("result.tmp_leftover"));
  std::filesystem::remove(dir.File("result.json"));
  std::filesystem::create_symlink(outside.File("result.json"), dir.File("result.json"));
  EXPECT_EQ(MustVerify(dir.path()).findings.Count("file.not_regular"), 3u);
}

TEST(VerifyRunTest, ReadsButNeverWrites) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 3, false);
  auto snapshot = [&] {
    std::map<std::string, std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
      files[entry.path().filename().string()] = dir.Read(entry.path().filename().string());
    return files;
  };
  const auto before = snapshot();
  EXPECT_EQ(MustVerify(dir.path()).exit_code, 3);
  EXPECT_EQ(snapshot(), before);
}

TEST(VerifyRunTest, RankSetFromResultAndFiles) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 3, 2, false);
  std::filesystem::remove(dir.File("rank-1.jsonl"));
  dir.Write("rank-007.jsonl", "");
  Report report = MustVerify(dir.path());
  EXPECT_EQ(testing::FindingIds(report), (std::set<std::string>{"ranks.not_created", "ranks.bad_file_name", "result.missing"}));
}

// A sparse 100 GB receipt file costs nothing to make and, read, took minutes:
// result.json's steps bound a valid file's size, so it is refused from fstat.
TEST(VerifyRunTest, ReceiptFileLargerThanItsStepsAllowIsRefusedUnread) {
  TempDir dir;
  testing::WriteReferenceRun(dir, 2, 5);
  ASSERT_EQ(::truncate(dir.File("rank-1.jsonl").c_str(), off_t{100} << 30), 0);
  ASSERT_EQ(::truncate(dir.File("metrics.jsonl").c_str(), off_t{100} << 30), 0);
  Report report = MustVerify(dir.path());
  EXPECT_EQ(report.exit_code, 1);
  std::vector<std::string> refused;
  for (const Finding& finding : report.findings.kept())
    if (finding.id == "file.too_large") refused.push_back(finding.file + ": " + finding.message);
  EXPECT_EQ(refused, (std::vector<std::string>{
                         dir.File("rank-1.jsonl") + ": 107374182400 bytes; 5 steps of at most 4097 "
                                                    "bytes allow 20485 (not read)",
                         dir.File("metrics.jsonl") + ": 107374182400 bytes; 5 steps of at most "
                                                     "4097 bytes allow 20485 (not read)"}));
  // A file exactly at the bound is read (and judged by its lines).
  testing::WriteReferenceRun(dir, 2, 5);
  ASSERT_EQ(::truncate(dir.File("rank-1.jsonl").c_str(), 5 * 4097), 0);
  EXPECT_FALSE(testing::FindingIds(MustVerify(dir.path())).contains("file.too_large"));
}

}  // namespace
}  // namespace dmlp::verify
