#include "trainer/plan.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "trainer/math/data_definition.h"
#include "trainer/output/checkpoint.h"

namespace dmlp {
namespace {

Environment ValidEnv() {
  return Environment(Environment::Map{
      {"STEPS", "3"}, {"SEED", "42"}, {"BATCH", "8"}, {"MICROBATCHES", "2"},
      {"LEARNING_RATE", "0.001"}, {"OUT_DIR", "/tmp/out"}, {"PLATFORM", "cpu"},
      {"NUM_PROCESSES", "2"}, {"PROCESS_ID", "1"}, {"COORDINATOR_PORT", "12355"},
      {"FEATURES", "8"}, {"WIDTH", "16"}, {"LAYERS", "2"}, {"CLASSES", "4"},
      {"HEARTBEAT_TIMEOUT_SECONDS", "60"}});
}

std::string ErrorWith(const std::string& name, const std::string& value) {
  Environment env = ValidEnv();
  env.Set(name, value);
  return ReadPlan(env).status().ToString();
}

std::string ErrorWithout(const std::string& name) {
  Environment::Map values = ValidEnv().values();
  values.erase(name);
  return ReadPlan(Environment(values)).status().ToString();
}

// ValidEnv on `platform` with GEMM and, unless null, DMLP_CPU_GEMM.
Result<Plan> PlanWithGemm(const char* platform, const char* gemm, const char* cpu_gemm) {
  Environment env = ValidEnv();
  env.Set("PLATFORM", platform);
  env.Set("GEMM", gemm);
  if (cpu_gemm != nullptr) env.Set("DMLP_CPU_GEMM", cpu_gemm);
  return ReadPlan(env);
}

TEST(PlanTest, ReadsAValidPlanWithDefaults) {
  Result<Plan> plan = ReadPlan(ValidEnv());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->steps, 3);
  EXPECT_EQ(plan->data_shards, 2);  // defaults to NUM_PROCESSES
  EXPECT_EQ(plan->local_rank, 1);   // defaults to PROCESS_ID
  EXPECT_EQ(plan->coordinator_address, "127.0.0.1");
  EXPECT_EQ(plan->reduction, Reduction::kOrdered);
  EXPECT_EQ(plan->matmul_precision, MatmulPrecision::kFp32);
  EXPECT_EQ(plan->checkpoint_every, 0);
  EXPECT_FALSE(plan->resume);
  EXPECT_EQ(plan->shard_size(), 4);
  EXPECT_EQ(plan->first_shard(), 1);
}

TEST(PlanTest, EveryRequiredVariableIsNamedWhenMissing) {
  for (const char* name : {"STEPS", "SEED", "BATCH", "MICROBATCHES", "LEARNING_RATE", "OUT_DIR",
                           "PLATFORM", "NUM_PROCESSES", "PROCESS_ID", "COORDINATOR_PORT",
                           "FEATURES", "WIDTH", "LAYERS", "CLASSES", "HEARTBEAT_TIMEOUT_SECONDS"}) {
    EXPECT_EQ(ErrorWithout(name), std::string("ENV_MISSING: ") + name);
    EXPECT_EQ(ErrorWith(name, ""), std::string("ENV_EMPTY: ") + name);
  }
}

TEST(PlanTest, OptionalVariablesMayNotBeEmpty) {
  for (const char* name : {"DATA_SHARDS", "MATMUL_PRECISION", "REDUCTION", "CHECKPOINT_EVERY",
                           "RESUME", "COORDINATOR_ADDRESS", "DIGEST_THREADS"})
    EXPECT_EQ(ErrorWith(name, ""), std::string("ENV_EMPTY: ") + name);
}

TEST(PlanTest, RangesAndChoices) {
  EXPECT_EQ(ErrorWith("STEPS", "0"), "ENV_INVALID: STEPS='0' must be >= 1");
  EXPECT_EQ(ErrorWith("SEED", "-1"), "ENV_INVALID: SEED='-1' is not an integer");
  EXPECT_EQ(ErrorWith("SEED", "9223372036854775808"),
            "ENV_INVALID: SEED='9223372036854775808' is out of range");
  // jax.random.key keeps 32 bits: a larger SEED would repeat another experiment.
  EXPECT_EQ(ErrorWith("SEED", "4294967301"),
            "ENV_INVALID: SEED=4294967301 must be < 2^32 (4294967296): jax.random.key keeps its "
            "low 32 bits, so it would repeat the experiment of SEED=5");
  Environment largest = ValidEnv();
  largest.Set("SEED", "4294967295");
  EXPECT_TRUE(ReadPlan(largest).ok());
  EXPECT_EQ(ErrorWith("BATCH", "8x"), "ENV_INVALID: BATCH='8x' is not an integer");
  EXPECT_EQ(ErrorWith("LEARNING_RATE", "-0.1"),
            "ENV_INVALID: LEARNING_RATE='-0.1' must be finite and > 0");
  EXPECT_EQ(ErrorWith("PLATFORM", "tpu"), "ENV_INVALID: PLATFORM='tpu' must be cuda or cpu");
  EXPECT_EQ(ErrorWith("COORDINATOR_PORT", "65536"),
            "ENV_INVALID: COORDINATOR_PORT='65536' must be <= 65535");
  EXPECT_EQ(ErrorWith("COORDINATOR_PORT", "0"), "ENV_INVALID: COORDINATOR_PORT='0' must be >= 1");
  EXPECT_EQ(ErrorWith("REDUCTION", "tree"),
            "ENV_INVALID: REDUCTION='tree' must be ordered or allreduce");
  EXPECT_EQ(ErrorWith("MATMUL_PRECISION", "bf16"),
            "ENV_INVALID: MATMUL_PRECISION='bf16' must be fp32 or tf32");
  EXPECT_EQ(ErrorWith("RESUME", "2"), "ENV_INVALID: RESUME='2' must be <= 1");
  EXPECT_EQ(ErrorWith("CHECKPOINT_EVERY", "-1"),
            "ENV_INVALID: CHECKPOINT_EVERY='-1' is not an integer");
  EXPECT_EQ(ErrorWith("HEARTBEAT_TIMEOUT_SECONDS", "0"),
            "ENV_INVALID: HEARTBEAT_TIMEOUT_SECONDS='0' must be >= 1");
}

// LEARNING_RATE is read by the number grammar of every setting: what strtod
// alone would also take (hex floats, a '+', "inf") is not a number.
TEST(PlanTest, LearningRateIsADecimalNumber) {
  EXPECT_EQ(ErrorWith("LEARNING_RATE", "0x1p-10"), "ENV_INVALID: LEARNING_RATE='0x1p-10' is not a number");
  EXPECT_EQ(ErrorWith("LEARNING_RATE", "+0.001"), "ENV_INVALID: LEARNING_RATE='+0.001' is not a number");
  EXPECT_EQ(ErrorWith("LEARNING_RATE", "infinity"), "ENV_INVALID: LEARNING_RATE='infinity' is not a number");
  for (const char* good : {"0.001", "1e-3", "1E-3", ".001", "1.e-3"}) {
    Environment env = ValidEnv();
    env.Set("LEARNING_RATE", good);
    Result<Plan> plan = ReadPlan(env);
    ASSERT_TRUE(plan.ok()) << good << ": " << plan.status().ToString();
    EXPECT_EQ(plan->learning_rate, 0.001) << good;
  }
}

TEST(PlanTest, CrossChecks) {
  EXPECT_EQ(ErrorWith("PROCESS_ID", "2"),
            "ENV_INVALID: PROCESS_ID must be less than NUM_PROCESSES");
  EXPECT_EQ(ErrorWith("BATCH", "9"), "ENV_INVALID: BATCH must be divisible by NUM_PROCESSES");
  EXPECT_EQ(ErrorWith("DATA_SHARDS", "3"), "ENV_INVALID: BATCH must be divisible by DATA_SHARDS");
  Environment env = ValidEnv();
  env.Set("BATCH", "12");
  env.Set("DATA_SHARDS", "3");
  EXPECT_EQ(ReadPlan(env).status().ToString(),
            "ENV_INVALID: DATA_SHARDS must be divisible by NUM_PROCESSES");
  EXPECT_EQ(ErrorWith("MATMUL_PRECISION", "tf32"),
            "ENV_INVALID: MATMUL_PRECISION=tf32 requires PLATFORM=cuda");
}

TEST(PlanTest, FingerprintIgnoresIdentityButNotTheJob) {
  Environment other = ValidEnv();
  other.Set("PROCESS_ID", "0");
  other.Set("OUT_DIR", "/elsewhere");
  EXPECT_EQ(PlanFingerprint(*ReadPlan(ValidEnv())), PlanFingerprint(*ReadPlan(other)));
  other.Set("LEARNING_RATE", "0.002");
  EXPECT_NE(PlanFingerprint(*ReadPlan(ValidEnv())), PlanFingerprint(*ReadPlan(other)));
}

TEST(PlanTest, AnEnginesPlaceGivesTheSamePlan) {
  // The same rank placed by srun instead of dmlp-launch: same fingerprint and
  // result.json plan, only the recorded source differs.
  Environment::Map values = ValidEnv().values();
  values.erase("PROCESS_ID");
  values.erase("NUM_PROCESSES");
  Environment slurm(values);
  slurm.Set("SLURM_PROCID", "1");
  slurm.Set("SLURM_NTASKS", "2");
  slurm.Set("SLURM_LOCALID", "1");
  Result<Plan> engine = ReadPlan(slurm);
  Result<Plan> launched = ReadPlan(ValidEnv());
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_EQ(engine->process_id, 1);
  EXPECT_EQ(engine->num_processes, 2);
  EXPECT_EQ(engine->place_source, PlaceSource::kSlurm);
  EXPECT_EQ(launched->place_source, PlaceSource::kDmlp);
  EXPECT_EQ(PlanFingerprint(*engine), PlanFingerprint(*launched));
  EXPECT_EQ(PlanDocument(*engine), PlanDocument(*launched));
  slurm.Set("NUM_PROCESSES", "4");
  EXPECT_EQ(ReadPlan(slurm).status().ToString(),
            "ENV_CONFLICT: NUM_PROCESSES=4 and SLURM_NTASKS=2 disagree");
}

TEST(PlanTest, DataDefinitionIsInEveryFingerprint) {
  // Samples and initial parameters from another definition (dmlp's Philox
  // draws of old) must not resume, pair up or compare as the same job.
  const Result<Plan> plan = ReadPlan(ValidEnv());
  ASSERT_TRUE(plan.ok());
  const std::string line = std::string("\ndata_definition=") + kDataDefinitionId + "\n";
  // A whole line, wherever the table (common/bit_settings.h) puts it.
  EXPECT_NE(("\n" + PlanFingerprint(*plan) + "\n").find(line), std::string::npos);
  EXPECT_NE(("\n" + CheckpointFingerprint(*plan) + "\n").find(line), std::string::npos);
  EXPECT_EQ(PlanDocument(*plan)["data_definition"], kDataDefinitionId);
}

TEST(PlanTest, DigestThreadsArePerRankAndOutsideTheFingerprint) {
  EXPECT_EQ(ReadPlan(ValidEnv())->digest_threads, 0);  // 0: the default from the CPUs
  EXPECT_EQ(ErrorWith("DIGEST_THREADS", "0"), "ENV_INVALID: DIGEST_THREADS='0' must be >= 1");
  EXPECT_EQ(ErrorWith("DIGEST_THREADS", "65"), "ENV_INVALID: DIGEST_THREADS='65' must be <= 64");
  EXPECT_EQ(ErrorWith("DIGEST_THREADS", "2x"), "ENV_INVALID: DIGEST_THREADS='2x' is not an integer");
  Environment four = ValidEnv();
  four.Set("DIGEST_THREADS", "4");
  Result<Plan> plan = ReadPlan(four);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->digest_threads, 4);
  // Ranks may hash with different thread counts: it never changes a byte.
  EXPECT_EQ(PlanFingerprint(*plan), PlanFingerprint(*ReadPlan(ValidEnv())));
  EXPECT_EQ(PlanDocument(*plan), PlanDocument(*ReadPlan(ValidEnv())));
}

TEST(PlanTest, CollectivesAreACudaChoiceThatRanksMustShare) {
  Environment cuda = ValidEnv();
  cuda.Set("PLATFORM", "cuda");
  Result<Plan> nccl = ReadPlan(cuda);
  ASSERT_TRUE(nccl.ok()) << nccl.status().ToString();
  EXPECT_EQ(nccl->collectives, CollectivesKind::kNccl);  // the default
  cuda.Set("COLLECTIVES", "gloo");
  Result<Plan> gloo = ReadPlan(cuda);
  ASSERT_TRUE(gloo.ok()) << gloo.status().ToString();
  EXPECT_EQ(gloo->collectives, CollectivesKind::kGloo);
  // Recorded where ranks compare plans (a mixed job is PLAN_MISMATCH, not a
  // hang) and in result.json's plan; not where it cannot change a byte.
  EXPECT_NE(PlanFingerprint(*nccl).find("\ncollectives=nccl\n"), std::string::npos);
  EXPECT_NE(PlanFingerprint(*gloo).find("\ncollectives=gloo\n"), std::string::npos);
  EXPECT_EQ(PlanDocument(*nccl)["collectives"], "nccl");
  EXPECT_EQ(PlanDocument(*gloo)["collectives"], "gloo");
  EXPECT_EQ(CheckpointFingerprint(*nccl), CheckpointFingerprint(*gloo));

  cuda.Set("COLLECTIVES", "mpi");
  EXPECT_EQ(ReadPlan(cuda).status().ToString(),
            "ENV_INVALID: COLLECTIVES='mpi' must be nccl or gloo");
  cuda.Set("COLLECTIVES", "");
  EXPECT_EQ(ReadPlan(cuda).status().ToString(), "ENV_EMPTY: COLLECTIVES");
}

TEST(PlanTest, GemmIsACudaChoiceOrderedByDefault) {
  Environment cuda = ValidEnv();
  cuda.Set("PLATFORM", "cuda");
  Result<Plan> ordered = ReadPlan(cuda);
  ASSERT_TRUE(ordered.ok()) << ordered.status().ToString();
  EXPECT_EQ(ordered->gemm, GemmKind::kOrdered);  // the default
  cuda.Set("GEMM", "cublas");
  Result<Plan> cublas = ReadPlan(cuda);
  ASSERT_TRUE(cublas.ok()) << cublas.status().ToString();
  EXPECT_EQ(cublas->gemm, GemmKind::kCublas);
  // Ranks compare it, and result.json's plan records it.
  EXPECT_NE(PlanFingerprint(*ordered), PlanFingerprint(*cublas));
  EXPECT_NE(CheckpointFingerprint(*ordered), CheckpointFingerprint(*cublas));
  EXPECT_EQ(PlanDocument(*ordered)["gemm"], "ordered");
  EXPECT_EQ(PlanDocument(*cublas)["gemm"], "cublas");
  cuda.Set("GEMM", "cutlass");
  EXPECT_EQ(ReadPlan(cuda).status().ToString(), "ENV_INVALID: GEMM='cutlass' must be ordered or cublas");
  cuda.Set("GEMM", "");
  EXPECT_EQ(ReadPlan(cuda).status().ToString(), "ENV_EMPTY: GEMM");
}

TEST(PlanTest, TheCpuPlatformComputesGemmOrderedOnly) {
  EXPECT_EQ(ErrorWith("GEMM", "cublas"),
            "ENV_INVALID: GEMM=cublas requires PLATFORM=cuda (PLATFORM=cpu computes GEMM=ordered)");
  // GEMM=ordered names what the CPU's own kernels compute, so one configuration
  // runs on both platforms; its plan is the CPU plan without it.
  Result<Plan> ordered = PlanWithGemm("cpu", "ordered", nullptr);
  ASSERT_TRUE(ordered.ok()) << ordered.status().ToString();
  EXPECT_EQ(PlanFingerprint(*ordered), PlanFingerprint(*ReadPlan(ValidEnv())));
  EXPECT_EQ(PlanDocument(*ordered), PlanDocument(*ReadPlan(ValidEnv())));
  EXPECT_EQ(PlanDocument(*ordered).count("gemm"), 0u);
  EXPECT_EQ(PlanWithGemm("cpu", "ordered", "blis").status().ToString(),
            "ENV_INVALID: GEMM=ordered contradicts DMLP_CPU_GEMM=blis (BLIS adds in an order of its own)");
}

TEST(PlanTest, Tf32IsACublasComputeType) {
  Environment cuda = ValidEnv();
  cuda.Set("PLATFORM", "cuda");
  cuda.Set("MATMUL_PRECISION", "tf32");
  EXPECT_EQ(ReadPlan(cuda).status().ToString(),
            "ENV_INVALID: MATMUL_PRECISION=tf32 requires GEMM=cublas (GEMM=ordered computes in fp32)");
  cuda.Set("GEMM", "cublas");
  Result<Plan> tf32 = ReadPlan(cuda);
  ASSERT_TRUE(tf32.ok()) << tf32.status().ToString();
  EXPECT_EQ(tf32->matmul_precision, MatmulPrecision::kTf32);
}

TEST(PlanTest, AuditEveryIsSharedByRanksButDecidesNoBit) {
  Result<Plan> standard = ReadPlan(ValidEnv());
  ASSERT_TRUE(standard.ok()) << standard.status().ToString();
  EXPECT_EQ(standard->audit_every, kDefaultAuditEvery);
  EXPECT_EQ(ErrorWith("AUDIT_EVERY", "-1"), "ENV_INVALID: AUDIT_EVERY='-1' is not an integer");
  EXPECT_EQ(ErrorWith("AUDIT_EVERY", "1.5"), "ENV_INVALID: AUDIT_EVERY='1.5' is not an integer");
  EXPECT_EQ(ErrorWith("AUDIT_EVERY", ""), "ENV_EMPTY: AUDIT_EVERY");
  Environment off = ValidEnv();
  off.Set("AUDIT_EVERY", "0");
  Result<Plan> unaudited = ReadPlan(off);
  ASSERT_TRUE(unaudited.ok()) << unaudited.status().ToString();
  EXPECT_EQ(unaudited->audit_every, 0);
  // Ranks compare it (a rank that never audits would leave its peers waiting
  // for its digest), but checkpoints and result.json do not carry it.
  EXPECT_NE(PlanFingerprint(*unaudited).find("\naudit_every=0"), std::string::npos);
  EXPECT_NE(PlanFingerprint(*unaudited), PlanFingerprint(*standard));
  EXPECT_EQ(CheckpointFingerprint(*unaudited), CheckpointFingerprint(*standard));
  EXPECT_EQ(CheckpointFingerprint(*standard).find("audit"), std::string::npos);
  EXPECT_EQ(PlanDocument(*unaudited), PlanDocument(*standard));
}

TEST(PlanTest, TheCpuGemmsOrderIsInTheFingerprintsItsKernelIsNot) {
  Result<Plan> standard = ReadPlan(ValidEnv());
  ASSERT_TRUE(standard.ok()) << standard.status().ToString();
  EXPECT_EQ(standard->cpu_gemm, CpuGemm::kAuto);
  const std::string order = "\ngemm_order=fma-chain-k-ascending";
  EXPECT_NE(PlanFingerprint(*standard).find(order), std::string::npos) << PlanFingerprint(*standard);
  EXPECT_NE(CheckpointFingerprint(*standard).find(order), std::string::npos);
  // Every one of dmlp's kernels: the same lines (ranks and resumes may mix them).
  for (const char* kernel : {"scalar", "avx2", "avx512"}) {
    Environment env = ValidEnv();
    env.Set("DMLP_CPU_GEMM", kernel);
    Result<Plan> forced = ReadPlan(env);
    if (!forced.ok()) {  // a kernel this CPU cannot run
      EXPECT_EQ(forced.status().code(), "ENV_INVALID") << kernel;
      continue;
    }
    EXPECT_EQ(PlanFingerprint(*forced), PlanFingerprint(*standard)) << kernel;
    EXPECT_EQ(CheckpointFingerprint(*forced), CheckpointFingerprint(*standard)) << kernel;
  }
  // BLIS adds in another order: ranks and resumes must not mix it with dmlp's.
  Environment env = ValidEnv();
  env.Set("DMLP_CPU_GEMM", "blis");
  Result<Plan> blis = ReadPlan(env);
  ASSERT_TRUE(blis.ok()) << blis.status().ToString();
  EXPECT_NE(PlanFingerprint(*blis), PlanFingerprint(*standard));
  EXPECT_NE(CheckpointFingerprint(*blis), CheckpointFingerprint(*standard));
  EXPECT_EQ(ErrorWith("DMLP_CPU_GEMM", "fast"),
            "ENV_INVALID: DMLP_CPU_GEMM='fast' must be auto or avx512 or avx2 or scalar or blis");
  EXPECT_EQ(ErrorWith("DMLP_CPU_GEMM", ""), "ENV_EMPTY: DMLP_CPU_GEMM");
}

// GEMM=ordered on CUDA adds the CPU kernels' chains: a checkpoint of either
// platform resumes on the other; cuBLAS's order is another.
TEST(PlanTest, ACpuPlanAndACudaOrderedPlanShareTheirCheckpointFingerprint) {
  Result<Plan> cpu = ReadPlan(ValidEnv());
  Result<Plan> ordered = PlanWithGemm("cuda", "ordered", nullptr);
  Result<Plan> cublas = PlanWithGemm("cuda", "cublas", nullptr);
  ASSERT_TRUE(cpu.ok() && ordered.ok() && cublas.ok());
  EXPECT_EQ(CheckpointFingerprint(*cpu), CheckpointFingerprint(*ordered));
  EXPECT_EQ(CheckpointFingerprint(*cpu).find("platform"), std::string::npos) << CheckpointFingerprint(*cpu);
  EXPECT_NE(CheckpointFingerprint(*cublas), CheckpointFingerprint(*ordered));
  EXPECT_NE(("\n" + CheckpointFingerprint(*cublas) + "\n").find("\ngemm_order=cublas-fp32\n"), std::string::npos);
  EXPECT_EQ(PlanDocument(*cpu)["gemm_order"], PlanDocument(*ordered)["gemm_order"]);
  // Ranks still agree on the platform: a mixed job is PLAN_MISMATCH, not a hang.
  EXPECT_NE(PlanFingerprint(*cpu), PlanFingerprint(*ordered));
  EXPECT_NE(("\n" + PlanFingerprint(*ordered) + "\n").find("\nplatform=cuda\n"), std::string::npos);
  // Under allreduce the library's sums differ: CPU (Gloo) and CUDA (NCCL) never share bits.
  Environment cpu_allreduce = ValidEnv(), cuda_allreduce = ValidEnv();
  cpu_allreduce.Set("REDUCTION", "allreduce");
  cuda_allreduce.Set("REDUCTION", "allreduce");
  cuda_allreduce.Set("PLATFORM", "cuda");
  EXPECT_NE(CheckpointFingerprint(*ReadPlan(cpu_allreduce)), CheckpointFingerprint(*ReadPlan(cuda_allreduce)));
}

// DMLP_CPU_TRANSPORT never changes a bit, but ranks on tcp and on shm would
// wait for each other on different transports: a plan line when not auto.
TEST(PlanTest, TheCpuTransportIsInThePlanFingerprintOnlyWhenChosen) {
  Result<Plan> standard = ReadPlan(ValidEnv());
  ASSERT_TRUE(standard.ok()) << standard.status().ToString();
  EXPECT_EQ(standard->cpu_transport, CpuTransport::kAuto);
  EXPECT_EQ(PlanFingerprint(*standard).find("cpu_transport"), std::string::npos);
  for (auto [word, transport] : {std::pair{"tcp", CpuTransport::kTcp}, std::pair{"shm", CpuTransport::kSharedMemory}}) {
    Environment env = ValidEnv();
    env.Set("DMLP_CPU_TRANSPORT", word);
    Result<Plan> chosen = ReadPlan(env);
    ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
    EXPECT_EQ(chosen->cpu_transport, transport);
    EXPECT_NE(("\n" + PlanFingerprint(*chosen) + "\n").find(std::string("\ncpu_transport=") + word + "\n"),
              std::string::npos)
        << PlanFingerprint(*chosen);
    EXPECT_EQ(CheckpointFingerprint(*chosen), CheckpointFingerprint(*standard)) << word;  // never a bit
  }
  EXPECT_EQ(ErrorWith("DMLP_CPU_TRANSPORT", "rdma"), "ENV_INVALID: DMLP_CPU_TRANSPORT='rdma' must be auto or tcp or shm");
  EXPECT_EQ(ErrorWith("DMLP_CPU_TRANSPORT", ""), "ENV_EMPTY: DMLP_CPU_TRANSPORT");
  Environment cuda = ValidEnv();
  cuda.Set("PLATFORM", "cuda");
  cuda.Set("DMLP_CPU_TRANSPORT", "shm");
  Result<Plan> refused = ReadPlan(cuda);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().ToString(), "ENV_INVALID: DMLP_CPU_TRANSPORT applies to PLATFORM=cpu only");
}

TEST(PlanTest, CollectivesAreRefusedOnTheCpuPlatform) {
  for (const char* value : {"gloo", "nccl", ""})
    EXPECT_EQ(ErrorWith("COLLECTIVES", value),
              "ENV_INVALID: COLLECTIVES applies to PLATFORM=cuda only (PLATFORM=cpu always uses "
              "gloo)");
  // Unset, the CPU plan's fingerprint and result.json plan are as before.
  EXPECT_EQ(PlanFingerprint(*ReadPlan(ValidEnv())).find("collectives"), std::string::npos);
  EXPECT_FALSE(PlanDocument(*ReadPlan(ValidEnv())).contains("collectives"));
}

TEST(PlanTest, DivergenceCheckIsOnByDefaultComparedByRanksButNeverDecidesBits) {
  Result<Plan> on = ReadPlan(ValidEnv());
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_TRUE(on->divergence_check);
  Environment env = ValidEnv();
  env.Set("DIVERGENCE_CHECK", "off");
  Result<Plan> off = ReadPlan(env);
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_FALSE(off->divergence_check);
  // Ranks that disagree are a PLAN_MISMATCH naming it; the default's lines are as before.
  EXPECT_NE(PlanFingerprint(*off).find("\ndivergence_check=off"), std::string::npos);
  EXPECT_EQ(PlanFingerprint(*on).find("divergence_check"), std::string::npos);
  // A checkpoint written with the check on resumes with it off, and result.json does not say.
  EXPECT_EQ(CheckpointFingerprint(*on), CheckpointFingerprint(*off));
  EXPECT_EQ(PlanDocument(*on), PlanDocument(*off));
  EXPECT_EQ(ErrorWith("DIVERGENCE_CHECK", "1"), "ENV_INVALID: DIVERGENCE_CHECK='1' must be on or off");
  EXPECT_EQ(ErrorWith("DIVERGENCE_CHECK", ""), "ENV_EMPTY: DIVERGENCE_CHECK");
}

class ConfigFileTest : public ::testing::Test {
 protected:
  // Set before any Write, so that an expectation may name it in the same statement.
  void SetUp() override { path_ = ::testing::TempDir() + "/dmlp-config-" + std::to_string(::getpid()) + ".yaml"; }
  std::string Write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  void TearDown() override { ::unlink(path_.c_str()); }
  std::string path_;
};

TEST_F(ConfigFileTest, EnvironmentOverridesTheFile) {
  Result<Environment> file = LoadConfigFile(Write("steps: 10\nseed: 7\nwidth: 32\n"));
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  Environment::Map values = ValidEnv().values();
  values.erase("SEED");
  values.erase("WIDTH");
  Environment env(values);
  env.FillFrom(*file);
  Result<Plan> plan = ReadPlan(env);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->steps, 3);  // from the environment
  EXPECT_EQ(plan->seed, 7);   // from the file
  EXPECT_EQ(plan->model.width, 32);
}

TEST_F(ConfigFileTest, BadFilesAreConfigInvalid) {
  EXPECT_EQ(LoadConfigFile(Write("steps: [1, 2]\n")).status().code(), "CONFIG_INVALID");
  EXPECT_EQ(LoadConfigFile(Write("- steps\n")).status().code(), "CONFIG_INVALID");
  EXPECT_EQ(LoadConfigFile(Write("stepz: 1\n")).status().ToString(),
            "CONFIG_INVALID: " + path_ + ": unknown key 'stepz'");
  EXPECT_EQ(LoadConfigFile(Write("STEPS: 1\n")).status().code(), "CONFIG_INVALID");
  EXPECT_EQ(LoadConfigFile(Write("steps: 1\n  bad: [\n")).status().code(), "CONFIG_INVALID");
  EXPECT_EQ(LoadConfigFile("/nonexistent/dmlp.yaml").status().ToString(),
            "CONFIG_INVALID: /nonexistent/dmlp.yaml: cannot be read");
}

// A quoted "\0" cut OUT_DIR short where the C library read it.
TEST_F(ConfigFileTest, ControlCharactersInAValueAreRefused) {
  const std::string nul = Write("out_dir: \"/x/nulA\\0/evil\"\n");
  EXPECT_EQ(LoadConfigFile(nul).status().ToString(),
            "CONFIG_INVALID: " + path_ + ": value of 'out_dir' '/x/nulA\\u0000/evil' holds a control character");
  EXPECT_EQ(LoadConfigFile(Write("coordinator_address: \"h\\e[31m\"\n")).status().code(), "CONFIG_INVALID");
  EXPECT_EQ(LoadConfigFile(Write("out_dir: \"a\\nb\"\n")).status().code(), "CONFIG_INVALID");
  EXPECT_TRUE(LoadConfigFile(Write("out_dir: \"/x/plain dir\"\n")).ok());
}

TEST_F(ConfigFileTest, ExplicitTagsAreRefused) {
  const std::string tagged = Write("steps: !!float 5\n");
  EXPECT_EQ(LoadConfigFile(tagged).status().ToString(),
            "CONFIG_INVALID: " + path_ + ": value of 'steps' has the tag 'tag:yaml.org,2002:float'; "
            "write the plain value");
  EXPECT_EQ(LoadConfigFile(Write("steps: !!str 5\n")).status().code(), "CONFIG_INVALID");
  EXPECT_TRUE(LoadConfigFile(Write("steps: 5\nplatform: \"cpu\"\nreduction: 'ordered'\n")).ok());
}

TEST_F(ConfigFileTest, ASecondDocumentIsRefused) {
  const std::string two = Write("steps: 5\n---\nseed: 1\n");
  EXPECT_EQ(LoadConfigFile(two).status().ToString(),
            "CONFIG_INVALID: " + path_ + ": holds 2 YAML documents (---); dmlp reads one");
  EXPECT_TRUE(LoadConfigFile(Write("---\nsteps: 5\n...\n")).ok());  // one document, marked
  EXPECT_TRUE(LoadConfigFile(Write("")).ok());
}

TEST_F(ConfigFileTest, UnknownKeysAreQuoted) {
  const std::string escaped = Write("\"st\\eps\": 1\n");
  EXPECT_EQ(LoadConfigFile(escaped).status().ToString(),
            "CONFIG_INVALID: " + path_ + ": unknown key 'st\\u001bps'");
}

// ReadPlan's error for ValidEnv without `names`, under the file at `path`.
std::string ErrorUnderFile(const std::string& path, std::initializer_list<const char*> names) {
  Result<Environment> file = LoadConfigFile(path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  Environment::Map values = ValidEnv().values();
  for (const char* name : names) values.erase(name);
  Environment env(values);
  env.FillFrom(*file);
  return ReadPlan(env).status().ToString();
}

// The file's error names the file and its key, not an environment variable
// the user never set.
TEST_F(ConfigFileTest, AnInvalidValueFromTheFileNamesTheFileAndKey) {
  EXPECT_EQ(ErrorUnderFile(Write("steps: zero\n"), {"STEPS"}),
            "CONFIG_INVALID: " + path_ + ": steps='zero' is not an integer");
  EXPECT_EQ(ErrorUnderFile(Write("seed: 4294967301\n"), {"SEED"}),
            "CONFIG_INVALID: " + path_ + ": seed=4294967301 must be < 2^32 (4294967296): jax.random.key "
            "keeps its low 32 bits, so it would repeat the experiment of SEED=5");
  EXPECT_EQ(ErrorUnderFile(Write("learning_rate: -1\n"), {"LEARNING_RATE"}),
            "CONFIG_INVALID: " + path_ + ": learning_rate='-1' must be finite and > 0");
  EXPECT_EQ(ErrorUnderFile(Write("learning_rate: 0x1p-10\n"), {"LEARNING_RATE"}),
            "CONFIG_INVALID: " + path_ + ": learning_rate='0x1p-10' is not a number");
  EXPECT_EQ(ErrorUnderFile(Write("reduction: tree\n"), {}),
            "CONFIG_INVALID: " + path_ + ": reduction='tree' must be ordered or allreduce");
  EXPECT_EQ(ErrorUnderFile(Write("coordinator_port: 70000\n"), {"COORDINATOR_PORT"}),
            "CONFIG_INVALID: " + path_ + ": coordinator_port='70000' must be <= 65535");
  EXPECT_EQ(ErrorUnderFile(Write("width: ''\n"), {"WIDTH"}), "CONFIG_INVALID: " + path_ + ": width is empty");
  EXPECT_EQ(ErrorUnderFile(Write("collectives: gloo\n"), {}),
            "CONFIG_INVALID: " + path_ + ": collectives applies to PLATFORM=cuda only (PLATFORM=cpu always "
            "uses gloo)");
}

// A rule between settings stays ENV_INVALID and names the file of those from one.
TEST_F(ConfigFileTest, ARuleBetweenSettingsNamesTheFileOfThoseFromIt) {
  EXPECT_EQ(ErrorUnderFile(Write("batch: 9\n"), {"BATCH"}),
            "ENV_INVALID: BATCH must be divisible by NUM_PROCESSES (batch from " + path_ + ")");
  EXPECT_EQ(ErrorUnderFile(Write("batch: 6\ndata_shards: 4\n"), {"BATCH"}),
            "ENV_INVALID: BATCH must be divisible by DATA_SHARDS (batch from " + path_ + ", data_shards from " +
                path_ + ")");
  EXPECT_EQ(ErrorUnderFile(Write("matmul_precision: tf32\n"), {}),
            "ENV_INVALID: MATMUL_PRECISION=tf32 requires PLATFORM=cuda (matmul_precision from " + path_ + ")");
  EXPECT_EQ(ErrorUnderFile(Write("width: 65536\nlayers: 2000000000\n"), {"WIDTH", "LAYERS"}),
            "ENV_INVALID: FEATURES/WIDTH/LAYERS/CLASSES: model too large (width from " + path_ + ", layers from " +
                path_ + ")");
}

TEST_F(ConfigFileTest, AValueTheEnvironmentOverridesIsTheEnvironments) {
  // STEPS stays in the environment, which wins: its error is the environment's.
  Result<Environment> file = LoadConfigFile(Write("steps: 5\n"));
  ASSERT_TRUE(file.ok());
  Environment env = ValidEnv();
  env.Set("STEPS", "zero");
  env.FillFrom(*file);
  EXPECT_EQ(ReadPlan(env).status().ToString(), "ENV_INVALID: STEPS='zero' is not an integer");
  EXPECT_FALSE(env.FileOf("STEPS"));
  // A value set over one from the file is no longer the file's.
  Environment from_file = *file;
  from_file.Set("STEPS", "6");
  EXPECT_FALSE(from_file.FileOf("STEPS"));
}

// yaml-cpp took a raw NUL as an escape: "seed: 4<NUL>x32" ran SEED=42.
TEST_F(ConfigFileTest, RawControlBytesAreRefusedWithTheirPlace) {
  const std::string nul = Write(std::string("steps: 3\nseed: 4\0x32\n", 21));
  EXPECT_EQ(LoadConfigFile(nul).status().ToString(),
            "CONFIG_INVALID: " + path_ + ": line 2, byte offset 16: the control byte 0x00 "
            "(YAML allows only tab, LF and CR raw)");
  EXPECT_EQ(LoadConfigFile(Write("out_dir: /x/a\x1b[2Jb\n")).status().ToString(),
            "CONFIG_INVALID: " + path_ + ": line 1, byte offset 13: the control byte 0x1b "
            "(YAML allows only tab, LF and CR raw)");
  EXPECT_EQ(LoadConfigFile(Write("steps: 3\x7f\n")).status().code(), "CONFIG_INVALID");
  EXPECT_EQ(LoadConfigFile(Write("steps:\t3\r\nseed: 4\r\n")).status().ToString(), "OK");
}

// Was std::__ios_failure out of yaml-cpp: SIGABRT, exit 134.
TEST(PlanTest, AConfigThatCannotBeReadIsConfigInvalid) {
  char scratch[] = "/tmp/dmlp23-plan-XXXXXX";
  ASSERT_NE(::mkdtemp(scratch), nullptr);
  const std::string directory = std::string(scratch) + "/d.yaml";
  ASSERT_EQ(::mkdir(directory.c_str(), 0755), 0);
  for (const std::string& path : {directory, std::string("/proc/self/mem")}) {
    Result<Environment> loaded = LoadConfigFile(path);
    EXPECT_EQ(loaded.status().code(), "CONFIG_INVALID") << path;
    EXPECT_TRUE(loaded.status().detail().starts_with(path + ": cannot be read")) << loaded.status().ToString();
  }
  ::rmdir(directory.c_str());
  ::rmdir(scratch);
}

Plan PlanWith(std::initializer_list<std::pair<const char*, const char*>> settings) {
  Environment env = ValidEnv();
  env.Set("DATA_SHARDS", "4");
  for (const auto& [name, value] : settings) env.Set(name, value);
  Result<Plan> plan = ReadPlan(env);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return plan.ok() ? *plan : Plan{};
}

// Was CHECKPOINT_PLAN_MISMATCH on a resume that only raised the heartbeat.
TEST(PlanTest, SettingsThatDecideNoBitMayChangeOnResume) {
  const Plan plan = PlanWith({});
  for (const auto& [name, value] : {std::pair{"HEARTBEAT_TIMEOUT_SECONDS", "86400"}, std::pair{"DIGEST_THREADS", "3"},
                                    std::pair{"STEPS", "30"}, std::pair{"CHECKPOINT_EVERY", "5"},
                                    std::pair{"RESUME", "1"}, std::pair{"DIVERGENCE_CHECK", "off"},
                                    std::pair{"AUDIT_EVERY", "0"}, std::pair{"NUM_PROCESSES", "4"},
                                    std::pair{"COORDINATOR_PORT", "999"}, std::pair{"OUT_DIR", "/elsewhere"}})
    EXPECT_EQ(CheckpointFingerprint(PlanWith({{name, value}})), CheckpointFingerprint(plan)) << name;
  // Ranks still agree on the heartbeat: a mixed job is a PLAN_MISMATCH naming it.
  EXPECT_NE(PlanFingerprint(PlanWith({{"HEARTBEAT_TIMEOUT_SECONDS", "86400"}})), PlanFingerprint(plan));
  for (const auto& [name, value] : {std::pair{"SEED", "1"}, std::pair{"BATCH", "16"}, std::pair{"MICROBATCHES", "1"},
                                    std::pair{"LEARNING_RATE", "0.01"}, std::pair{"WIDTH", "8"},
                                    std::pair{"DATA_SHARDS", "2"}, std::pair{"REDUCTION", "allreduce"}})
    EXPECT_NE(CheckpointFingerprint(PlanWith({{name, value}})), CheckpointFingerprint(plan)) << name;
}

// Was accepted: a resume of an allreduce job on 4 ranks from 2 ranks' checkpoint
// gave receipts no clean run of the recorded plan gives.
TEST(PlanTest, WithAllreduceTheWorldSizeAndCollectivesDecideTheBits) {
  const Plan two = PlanWith({{"REDUCTION", "allreduce"}});
  const Plan four = PlanWith({{"REDUCTION", "allreduce"}, {"NUM_PROCESSES", "4"}});
  EXPECT_NE(CheckpointFingerprint(two), CheckpointFingerprint(four));
  EXPECT_NE(CheckpointFingerprint(two).find("\nnum_processes=2"), std::string::npos);
  const Plan nccl = PlanWith({{"PLATFORM", "cuda"}, {"REDUCTION", "allreduce"}});
  const Plan gloo = PlanWith({{"PLATFORM", "cuda"}, {"REDUCTION", "allreduce"}, {"COLLECTIVES", "gloo"}});
  EXPECT_NE(CheckpointFingerprint(nccl), CheckpointFingerprint(gloo));
  // The heartbeat decides no bit under allreduce either.
  EXPECT_EQ(CheckpointFingerprint(PlanWith({{"REDUCTION", "allreduce"}, {"HEARTBEAT_TIMEOUT_SECONDS", "5"}})),
            CheckpointFingerprint(two));
}

}  // namespace
}  // namespace dmlp
