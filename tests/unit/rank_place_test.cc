#include "common/rank_place.h"

#include <gtest/gtest.h>

namespace dmlp {
namespace {

RankPlace PlaceOf(Environment::Map values) {
  Result<RankPlace> place = ReadRankPlace(Environment(std::move(values)));
  EXPECT_TRUE(place.ok()) << place.status().ToString();
  return place.ok() ? *place : RankPlace{};
}

std::string ErrorOf(Environment::Map values) {
  return ReadRankPlace(Environment(std::move(values))).status().ToString();
}

// What each engine exports for rank 1 of 2 on one host (the variables the
// real engines set, as tests/e2e/trainer/engines_e2e.py sees them).
const Environment::Map kSlurm = {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"},
                                 {"SLURM_LOCALID", "1"}, {"SLURM_STEP_NODELIST", "gpu[01-02]"},
                                 {"COORDINATOR_PORT", "18123"}};
const Environment::Map kOpenMpi = {{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"PMIX_RANK", "1"},
                                   {"COORDINATOR_PORT", "18123"}};
const Environment::Map kTorchrun = {{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"},
                                    {"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "29500"},
                                    {"TORCHELASTIC_RUN_ID", "none"}};

Environment::Map With(Environment::Map base, const Environment::Map& more) {
  for (const auto& [name, value] : more) base[name] = value;
  return base;
}

TEST(RankPlaceTest, DmlpLaunchsNamesAsBefore) {
  RankPlace place = PlaceOf({{"PROCESS_ID", "1"}, {"NUM_PROCESSES", "2"}, {"COORDINATOR_PORT", "9"}});
  EXPECT_EQ(place.source, PlaceSource::kDmlp);
  EXPECT_EQ(place.process_id, 1);
  EXPECT_EQ(place.num_processes, 2);
  EXPECT_EQ(place.local_rank, 1);  // defaults to PROCESS_ID on one host
  EXPECT_EQ(place.coordinator_address, "127.0.0.1");
  EXPECT_EQ(place.coordinator_from, "default");
}

TEST(RankPlaceTest, Slurm) {
  RankPlace place = PlaceOf(kSlurm);
  EXPECT_EQ(place.source, PlaceSource::kSlurm);
  EXPECT_STREQ(PlaceSourceName(place.source), "slurm");
  EXPECT_EQ(place.process_id, 1);
  EXPECT_EQ(place.num_processes, 2);
  EXPECT_EQ(place.local_rank, 1);
  EXPECT_EQ(place.coordinator_address, "gpu01");  // the step's first host
  EXPECT_EQ(place.coordinator_from, "SLURM_STEP_NODELIST");
  EXPECT_EQ(place.coordinator_port, 18123);
  // The step's list before the job's; the job's when there is no step list.
  EXPECT_EQ(PlaceOf(With(kSlurm, {{"SLURM_JOB_NODELIST", "login1"}})).coordinator_address, "gpu01");
  Environment::Map job_only = With(kSlurm, {{"SLURM_JOB_NODELIST", "n[7-9]"}});
  job_only.erase("SLURM_STEP_NODELIST");
  EXPECT_EQ(PlaceOf(job_only).coordinator_address, "n7");
  EXPECT_EQ(PlaceOf(job_only).coordinator_from, "SLURM_JOB_NODELIST");
}

TEST(RankPlaceTest, SrunGpusPerTaskBindsEachTaskToItsGpuZero) {
  RankPlace place = PlaceOf(With(kSlurm, {{"SLURM_GPUS_PER_TASK", "1"}}));
  EXPECT_EQ(place.process_id, 1);
  EXPECT_EQ(place.local_rank, 0);
}

TEST(RankPlaceTest, OpenMpiWithItsPmixRank) {
  RankPlace place = PlaceOf(kOpenMpi);
  EXPECT_EQ(place.source, PlaceSource::kOpenMpi);
  EXPECT_EQ(place.process_id, 1);
  EXPECT_EQ(place.num_processes, 2);
  EXPECT_EQ(place.local_rank, 1);
  EXPECT_EQ(place.coordinator_address, "127.0.0.1");
}

TEST(RankPlaceTest, PmixAloneTakesTheSizeFromNumProcesses) {
  RankPlace place = PlaceOf({{"PMIX_RANK", "3"}, {"NUM_PROCESSES", "4"}, {"COORDINATOR_PORT", "9"}});
  EXPECT_EQ(place.source, PlaceSource::kPmix);
  EXPECT_EQ(place.process_id, 3);
  EXPECT_EQ(place.num_processes, 4);
  EXPECT_EQ(place.local_rank, 0);  // no local rank anywhere: one rank per host
  EXPECT_EQ(ErrorOf({{"PMIX_RANK", "3"}, {"COORDINATOR_PORT", "9"}}), "ENV_MISSING: NUM_PROCESSES");
}

TEST(RankPlaceTest, TorchrunAndKubernetes) {
  RankPlace place = PlaceOf(kTorchrun);
  EXPECT_EQ(place.source, PlaceSource::kTorchrun);
  EXPECT_EQ(place.process_id, 1);
  EXPECT_EQ(place.local_rank, 1);
  EXPECT_EQ(place.coordinator_address, "10.0.0.5");
  EXPECT_EQ(place.coordinator_from, "MASTER_ADDR");
  EXPECT_EQ(place.coordinator_port, 29500);
  // Under torchrun's agent, MASTER_PORT is the agent's own store.
  EXPECT_EQ(ErrorOf(With(kTorchrun, {{"TORCHELASTIC_USE_AGENT_STORE", "True"}})),
            "ENV_MISSING: COORDINATOR_PORT (torchrun's MASTER_PORT is its agent's store)");
  EXPECT_EQ(PlaceOf(With(kTorchrun, {{"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                     {"COORDINATOR_PORT", "18125"}})).coordinator_port, 18125);
  // A PyTorchJob pod: no agent, no LOCAL_RANK.
  RankPlace pod = PlaceOf({{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"MASTER_ADDR", "job-master-0"},
                           {"MASTER_PORT", "23456"}});
  EXPECT_EQ(pod.process_id, 5);
  EXPECT_EQ(pod.local_rank, 0);
  EXPECT_EQ(pod.coordinator_address, "job-master-0");
}

TEST(RankPlaceTest, DmlpsOwnNamesWin) {
  // dmlp-launch run by an engine (one launcher per node under srun): PROCESS_ID decides.
  RankPlace place = PlaceOf(With(kSlurm, {{"PROCESS_ID", "5"}, {"NUM_PROCESSES", "8"},
                                          {"LOCAL_RANK", "5"}}));
  EXPECT_EQ(place.source, PlaceSource::kDmlp);
  EXPECT_EQ(place.process_id, 5);
  EXPECT_EQ(place.num_processes, 8);
  EXPECT_EQ(place.coordinator_address, "127.0.0.1");  // node lists serve Slurm-placed ranks only
  RankPlace coordinator = PlaceOf(With(kTorchrun, {{"COORDINATOR_ADDRESS", "head"},
                                                   {"COORDINATOR_PORT", "18124"}}));
  EXPECT_EQ(coordinator.coordinator_address, "head");
  EXPECT_EQ(coordinator.coordinator_from, "COORDINATOR_ADDRESS");
  EXPECT_EQ(coordinator.coordinator_port, 18124);
  EXPECT_EQ(PlaceOf(With(kSlurm, {{"MASTER_ADDR", "m"}})).coordinator_address, "m");
}

TEST(RankPlaceTest, InnerLaunchersUnderSlurmAreNotConflicts) {
  // srun -N2 torchrun --nproc-per-node 8: Slurm's task is the agent (node 1 of 2).
  RankPlace torchrun = PlaceOf(With(With(kSlurm, {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"},
                                                  {"SLURM_LOCALID", "0"}}),
                                    {{"RANK", "9"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "1"},
                                     {"TORCHELASTIC_RUN_ID", "7"}}));
  EXPECT_EQ(torchrun.source, PlaceSource::kTorchrun);
  EXPECT_EQ(torchrun.process_id, 9);
  EXPECT_EQ(torchrun.num_processes, 16);
  // mpirun inside an sbatch allocation: the batch step's SLURM_PROCID=0 / SLURM_NTASKS=16.
  RankPlace mpi = PlaceOf(With(kOpenMpi, {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"},
                                          {"SLURM_LOCALID", "0"}, {"SLURM_JOB_NODELIST", "n1"}}));
  EXPECT_EQ(mpi.source, PlaceSource::kOpenMpi);
  EXPECT_EQ(mpi.process_id, 1);
  EXPECT_EQ(mpi.num_processes, 2);
}

TEST(RankPlaceTest, SourcesThatDisagreeAreEnvConflict) {
  // A RANK left in the shell reaches every srun task; without torchrun's agent it is a claim.
  EXPECT_EQ(ErrorOf(With(kSlurm, {{"RANK", "0"}})), "ENV_CONFLICT: RANK=0 and SLURM_PROCID=1 disagree");
  EXPECT_EQ(ErrorOf(With(kOpenMpi, {{"PMIX_RANK", "0"}})),
            "ENV_CONFLICT: OMPI_COMM_WORLD_RANK=1 and PMIX_RANK=0 disagree");
  EXPECT_EQ(ErrorOf(With(kSlurm, {{"NUM_PROCESSES", "4"}})),
            "ENV_CONFLICT: NUM_PROCESSES=4 and SLURM_NTASKS=2 disagree");
  EXPECT_EQ(ErrorOf(With(kOpenMpi, {{"LOCAL_RANK", "0"}})),
            "ENV_CONFLICT: LOCAL_RANK=0 and OMPI_COMM_WORLD_LOCAL_RANK=1 disagree");
  // Without torchrun's agent, RANK/WORLD_SIZE (a pod's) and mpirun's must agree.
  Environment::Map pod_and_mpi = With(kTorchrun, {{"OMPI_COMM_WORLD_RANK", "1"},
                                                  {"OMPI_COMM_WORLD_SIZE", "3"}});
  pod_and_mpi.erase("TORCHELASTIC_RUN_ID");
  EXPECT_EQ(ErrorOf(pod_and_mpi), "ENV_CONFLICT: WORLD_SIZE=2 and OMPI_COMM_WORLD_SIZE=3 disagree");
  // Agreeing sources are fine.
  EXPECT_EQ(PlaceOf(With(kSlurm, {{"NUM_PROCESSES", "2"}, {"LOCAL_RANK", "1"}})).process_id, 1);
}

TEST(RankPlaceTest, NoSourceIsTheExistingEnvMissing) {
  EXPECT_EQ(ErrorOf({{"COORDINATOR_PORT", "9"}}), "ENV_MISSING: NUM_PROCESSES");
  EXPECT_EQ(ErrorOf({{"NUM_PROCESSES", "2"}, {"COORDINATOR_PORT", "9"}}), "ENV_MISSING: PROCESS_ID");
  Environment::Map no_port = kSlurm;
  no_port.erase("COORDINATOR_PORT");
  EXPECT_EQ(ErrorOf(no_port), "ENV_MISSING: COORDINATOR_PORT");
  EXPECT_EQ(DetectPlaceSource(Environment(Environment::Map{{"NUM_PROCESSES", "2"}})), std::nullopt);
}

TEST(RankPlaceTest, DamagedEngineValuesNameTheirVariable) {
  EXPECT_EQ(ErrorOf(With(kSlurm, {{"SLURM_PROCID", "one"}})),
            "ENV_INVALID: SLURM_PROCID='one' is not an integer");
  EXPECT_EQ(ErrorOf(With(kSlurm, {{"SLURM_NTASKS", "0"}})),
            "ENV_INVALID: SLURM_NTASKS='0' must be >= 1");
  EXPECT_EQ(ErrorOf(With(kSlurm, {{"SLURM_PROCID", "2"}})),
            "ENV_INVALID: SLURM_PROCID=2 must be less than SLURM_NTASKS=2");
  EXPECT_EQ(ErrorOf(With(kSlurm, {{"SLURM_LOCALID", ""}})), "ENV_EMPTY: SLURM_LOCALID");
  EXPECT_EQ(ErrorOf(With(kSlurm, {{"SLURM_STEP_NODELIST", "gpu[01-"}})),
            "ENV_INVALID: SLURM_STEP_NODELIST='gpu[01-' has an unclosed '['");
  Environment::Map job_list = With(kSlurm, {{"SLURM_JOB_NODELIST", "gpu[2-1]"}});
  job_list.erase("SLURM_STEP_NODELIST");
  EXPECT_EQ(ErrorOf(job_list), "ENV_INVALID: SLURM_JOB_NODELIST='gpu[2-1]' has the descending range '2-1'");
  EXPECT_EQ(ErrorOf(With(kTorchrun, {{"MASTER_PORT", "70000"}})),
            "ENV_INVALID: MASTER_PORT='70000' must be <= 65535");
  EXPECT_EQ(ErrorOf(With(kTorchrun, {{"MASTER_ADDR", " "}})), "ENV_EMPTY: MASTER_ADDR");
}

TEST(RankPlaceTest, DetectionNamesTheEngineForOtherUses) {
  EXPECT_EQ(DetectPlaceSource(Environment(kSlurm)), PlaceSource::kSlurm);
  EXPECT_EQ(DetectPlaceSource(Environment(kOpenMpi)), PlaceSource::kOpenMpi);
  EXPECT_EQ(DetectPlaceSource(Environment(kTorchrun)), PlaceSource::kTorchrun);
  EXPECT_EQ(DetectPlaceSource(Environment(Environment::Map{{"PMIX_RANK", "0"}})), PlaceSource::kPmix);
  EXPECT_EQ(DetectPlaceSource(Environment(With(kSlurm, {{"PROCESS_ID", "0"}}))), PlaceSource::kDmlp);
}

TEST(RankPlaceTest, HostPortBracketsIpv6) {
  EXPECT_EQ(FormatHostPort("127.0.0.1", 31011), "127.0.0.1:31011");
  EXPECT_EQ(FormatHostPort("node-1", 12355), "node-1:12355");
  EXPECT_EQ(FormatHostPort("::1", 31011), "[::1]:31011");
  EXPECT_EQ(FormatHostPort("fe80::1%eth0", 1), "[fe80::1%eth0]:1");
}

}  // namespace
}  // namespace dmlp
