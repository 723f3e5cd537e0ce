// --against's first questions: must two runs match (verify/comparability.h), and
// are they one experiment (verify/experiment.h)?
#include "verify/comparability.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "verify/experiment.h"

namespace dmlp::verify {
namespace {

// A dmlp result.json's comparable parts, from committed sources.
ResultDoc Doc() {
  ResultDoc doc;
  doc.format = ResultDoc::Format::kDmlp;
  doc.plan = {{"batch", 64}, {"data_shards", 2}, {"gemm_order", "skx"}, {"learning_rate", 0.001},
              {"out_dir", "/runs/a"}, {"platform", "cpu"}, {"reduction", "ordered"}, {"seed", 42}, {"steps", 20}};
  doc.model = {{"classes", 10}, {"features", 64}, {"layers", 3}, {"port", 12355}, {"process_id", 0},
               {"processes", 2}, {"width", 128}};
  doc.build = {{"version", "0.1.0"}, {"git_commit", std::string(40, 'a')}, {"git_dirty", "false"},
               {"compiler", "GNU 12.2.0"}};
  doc.fingerprint = {{"platform", "cpu"}, {"blas", {{"kernel", "skx"}, {"threads", 1}}},
                     {"collectives", "gloo 0.5.0 tcp"}, {"nccl_env", nlohmann::json::object()}};
  return doc;
}

TEST(Comparability, SamePlanBuildAndStackMustMatch) {
  Comparability same = CompareSetups(Doc(), Doc());
  EXPECT_EQ(same.kind, Comparability::Kind::kMustMatch);
  EXPECT_TRUE(same.reasons.empty());
}

TEST(Comparability, WhatNeverChangesABitIsIgnored) {
  ResultDoc other = Doc();
  other.plan["out_dir"] = "/runs/b";
  other.plan["steps"] = 1200;
  other.model["port"] = 29500;
  other.model["processes"] = 1;  // the ordered reduction's promise
  other.fingerprint["blas"]["threads"] = 2;
  other.fingerprint["collectives"] = "none (1 process)";
  other.fingerprint["nccl_env"] = {{"NCCL_P2P_DISABLE", "1"}};
  EXPECT_EQ(CompareSetups(Doc(), other).kind, Comparability::Kind::kMustMatch);
}

// Two GPUs of one model in two hosts: their PCI bus ids, ordinals and memory
// sizes (which older builds put in the fingerprint) decide no bits. With
// cuBLAS, the model (its SM count) does.
TEST(Comparability, TwoGpusOfOneModelCompare) {
  ResultDoc golden = Doc(), run = Doc();
  golden.plan["gemm"] = run.plan["gemm"] = "cublas";
  golden.fingerprint["device"] = {{"name", "NVIDIA H200"}, {"sm_count", 132},
                                  {"pci_bus_id", "0000:19:00.0"}, {"ordinal", 0},
                                  {"memory_bytes", 150121545728}};
  run.fingerprint["device"] = {{"name", "NVIDIA H200"}, {"sm_count", 132},
                               {"pci_bus_id", "0000:3B:00.0"}, {"ordinal", 3},
                               {"memory_bytes", 150122070016}};
  Comparability result = CompareSetups(golden, run);
  EXPECT_EQ(result.kind, Comparability::Kind::kMustMatch) << testing::PrintToString(result.reasons);
  run.fingerprint["device"]["sm_count"] = 114;  // another model's bits
  EXPECT_EQ(CompareSetups(golden, run).kind, Comparability::Kind::kNotComparable);
}

// A CUDA run with GEMM=ordered computes the CPU's chains: it must match a CPU
// run of the same plan and build, whatever the GPU; a cuBLAS run must not.
ResultDoc CudaDoc(const char* gemm, const char* gemm_order) {
  ResultDoc doc = Doc();
  doc.plan["platform"] = "cuda";
  doc.plan["collectives"] = "nccl";
  doc.plan["gemm"] = gemm;
  doc.plan["gemm_order"] = gemm_order;
  doc.fingerprint = {{"platform", "cuda"},
                     {"device", {{"name", "NVIDIA H100 80GB HBM3"}, {"sm_count", 132}, {"compute_capability", "9.0"}}},
                     {"cuda_driver", "13.0"}, {"cuda_runtime", "13.0"}, {"gemm", {{"kind", gemm}}},
                     {"nccl", "2.28.9"}, {"collectives", "nccl"}, {"cuda_env", nlohmann::json::object()}};
  return doc;
}

TEST(Comparability, ACpuRunAndACudaOrderedRunMustMatch) {
  ResultDoc cpu = Doc();
  cpu.plan["gemm_order"] = "fma-chain-k-ascending";
  cpu.fingerprint["blas"]["kernel"] = "fma-chain-k-ascending";
  const ResultDoc ordered = CudaDoc("ordered", "fma-chain-k-ascending");
  Comparability result = CompareSetups(cpu, ordered);
  EXPECT_EQ(result.kind, Comparability::Kind::kMustMatch) << testing::PrintToString(result.reasons);
  ResultDoc other_gpu = ordered;
  other_gpu.fingerprint["device"] = {{"name", "NVIDIA L4"}, {"sm_count", 58}, {"compute_capability", "8.9"}};
  EXPECT_EQ(CompareSetups(ordered, other_gpu).kind, Comparability::Kind::kMustMatch);

  ResultDoc cublas = CudaDoc("cublas", "cublas-fp32");
  cublas.fingerprint["gemm"] = {{"kind", "cublas"}, {"version", "13.1.0"}, {"compute_type", "CUBLAS_COMPUTE_32F"}};
  result = CompareSetups(cpu, cublas);
  EXPECT_EQ(result.kind, Comparability::Kind::kNotComparable);
  EXPECT_EQ(result.reasons.at(0), "plan.gemm_order: \"fma-chain-k-ascending\" vs \"cublas-fp32\"");
  // Under allreduce the sums are Gloo's against NCCL's.
  ResultDoc cpu_allreduce = cpu, ordered_allreduce = ordered;
  cpu_allreduce.plan["reduction"] = ordered_allreduce.plan["reduction"] = "allreduce";
  EXPECT_EQ(CompareSetups(cpu_allreduce, ordered_allreduce).kind, Comparability::Kind::kNotComparable);
}

TEST(Comparability, RunsOfAnotherDataDefinitionAreNotComparable) {
  // dmlp before the reference's data drew Philox data and wrote no plan.data_definition;
  // even from the same commit (a rebuilt old tree), its runs are another experiment.
  ResultDoc today = Doc();
  today.plan["data_definition"] = "jax-0.10.2-threefry/flax-0.12.5-lecun";
  Comparability result = CompareSetups(Doc(), today);
  EXPECT_EQ(result.kind, Comparability::Kind::kNotComparable);
  ASSERT_EQ(result.reasons.size(), 1u);
  EXPECT_EQ(result.reasons[0], "plan.data_definition: (absent) vs \"jax-0.10.2-threefry/flax-0.12.5-lecun\"");
}

TEST(Comparability, UnderAllreduceTheWorldSizeMatters) {
  ResultDoc golden = Doc(), run = Doc();
  golden.plan["reduction"] = run.plan["reduction"] = "allreduce";
  run.model["processes"] = 4;
  Comparability result = CompareSetups(golden, run);
  EXPECT_EQ(result.kind, Comparability::Kind::kNotComparable);
  ASSERT_EQ(result.reasons.size(), 1u);
  EXPECT_EQ(result.reasons[0], "model.processes: 2 vs 4");
}

TEST(Comparability, EveryDifferenceIsNamed) {
  ResultDoc run = Doc();
  run.plan["seed"] = 43;
  run.build["git_commit"] = std::string(40, 'b');
  run.plan["gemm_order"] = "haswell";
  run.fingerprint["gpu"] = "NVIDIA L4";
  Comparability result = CompareSetups(Doc(), run);
  EXPECT_EQ(result.kind, Comparability::Kind::kNotComparable);
  EXPECT_EQ(result.reasons,
            (std::vector<std::string>{"plan.gemm_order: \"skx\" vs \"haswell\"", "plan.seed: 42 vs 43",
                                      "build.git_commit: \"" + std::string(40, 'a') + "\" vs \"" +
                                          std::string(40, 'b') + "\"",
                                      "fingerprint.gpu: (absent) vs \"NVIDIA L4\""}));
}

TEST(Experiment, OnlyWhatPosesTheProblemIsCompared) {
  EXPECT_TRUE(ExperimentDifferences(Doc(), Doc()).empty());
  ResultDoc run = Doc();
  run.plan["seed"] = 43;
  run.model["width"] = 256;
  // One value written two ways; and what only decides bits.
  run.plan["learning_rate"] = nlohmann::json::parse("1e-3");
  run.plan["batch"] = 64.0;
  run.plan["platform"] = "cuda";
  run.plan["data_shards"] = 4;
  run.plan["steps"] = 50;
  run.model["processes"] = 1;
  run.build["git_commit"] = std::string(40, 'b');
  run.fingerprint["blas"]["kernel"] = "haswell";
  EXPECT_EQ(ExperimentDifferences(Doc(), run),
            (std::vector<std::string>{"plan.seed: 42 vs 43", "model.width: 128 vs 256"}));
  EXPECT_TRUE(ExperimentDifferences(std::nullopt, run).empty());  // a run still going poses none known
  EXPECT_TRUE(ExperimentDifferences(Doc(), std::nullopt).empty());
}

TEST(Experiment, TheDataDefinitionCountsBetweenDmlpRunsOnly) {
  ResultDoc today = Doc();
  today.plan["data_definition"] = "jax-0.10.2-threefry/flax-0.12.5-lecun";
  EXPECT_EQ(ExperimentDifferences(Doc(), today),
            (std::vector<std::string>{"plan.data_definition: (absent) vs \"jax-0.10.2-threefry/flax-0.12.5-lecun\""}));
  // The reference's format records none: its data are what dmlp's definition names.
  ResultDoc reference = Doc();
  reference.format = ResultDoc::Format::kReference;
  EXPECT_TRUE(ExperimentDifferences(reference, today).empty());
  EXPECT_TRUE(ExperimentDifferences(today, reference).empty());
  std::optional<Finding> intended = OtherExperimentFinding(Doc(), today, "golden", "run", /*allowed=*/true);
  ASSERT_TRUE(intended);
  EXPECT_EQ(intended->id, "against.other_experiment");
  EXPECT_EQ(intended->severity, Severity::kInfo);
  EXPECT_FALSE(OtherExperimentFinding(today, today, "golden", "run", false));
}

TEST(Comparability, UnknownWithoutResultBuildOrCommittedSources) {
  Comparability missing = CompareSetups(std::nullopt, Doc());
  EXPECT_EQ(missing.kind, Comparability::Kind::kUnknown);
  EXPECT_EQ(missing.reasons, (std::vector<std::string>{"GOLDEN has no valid result.json"}));
  ResultDoc reference = Doc();
  reference.format = ResultDoc::Format::kReference;
  EXPECT_EQ(CompareSetups(Doc(), reference).reasons,
            (std::vector<std::string>{"RUN's result.json records no build"}));
  ResultDoc dirty = Doc();
  dirty.build["git_dirty"] = "true";
  Comparability both_dirty = CompareSetups(dirty, dirty);
  EXPECT_EQ(both_dirty.kind, Comparability::Kind::kUnknown);
  ASSERT_EQ(both_dirty.reasons.size(), 1u);
  EXPECT_NE(both_dirty.reasons[0].find("uncommitted changes"), std::string::npos);
  EXPECT_STREQ(ComparabilityName(both_dirty.kind), "unknown");
}

}  // namespace
}  // namespace dmlp::verify
