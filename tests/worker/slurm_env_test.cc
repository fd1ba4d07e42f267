// The worker's identity inside a Slurm job, from the variables Slurm 22.05 sets for a task of
// the pilot's `srun ablate-worker` step (recorded with tests/util/slurm_cluster's cluster).
#include "worker/slurm_env.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ablate::worker {
namespace {

using Env = std::map<std::string, std::string>;

absl::StatusOr<SlurmIdentity> Read(const Env& env, const std::string& pool = "h100") {
  return ReadSlurmIdentity(
      [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      pool);
}

// Node 1 of a 2-node pilot, requeued once, in step 0 of job 12.
const Env kTask = {{"SLURM_JOB_ID", "12"},         {"SLURM_CLUSTER_NAME", "lab"},
                   {"SLURM_RESTART_COUNT", "1"},   {"SLURM_NODEID", "1"},
                   {"SLURM_JOB_NUM_NODES", "2"},   {"SLURM_STEP_ID", "0"},
                   {"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}};

TEST(SlurmEnvTest, IdNamesTheAllocationAndTheStepIsKept) {
  absl::StatusOr<SlurmIdentity> id = Read(kTask);
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->worker_id, "slurm/lab/12.1/1");
  EXPECT_EQ(id->allocation.job_id(), 12);
  EXPECT_EQ(id->allocation.restart_count(), 1);
  EXPECT_EQ(id->allocation.node_index(), 1);
  EXPECT_EQ(id->allocation.num_nodes(), 2);
  EXPECT_EQ(id->allocation.pool(), "h100");
  EXPECT_EQ(id->allocation.step_id(), "0");
  EXPECT_EQ(id->gpu_indices, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(SlurmEnvTest, OutsideAStepThereIsNoStepId) {
  Env env = {{"SLURM_JOB_ID", "7"}};  // e.g. run from the batch script itself, not by srun
  absl::StatusOr<SlurmIdentity> id = Read(env, "");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->worker_id, "slurm/slurm/7.0/0");
  EXPECT_EQ(id->allocation.step_id(), "");
  EXPECT_TRUE(id->gpu_indices.empty());
}

TEST(SlurmEnvTest, MissingOrMalformedVariablesAreNamed) {
  absl::StatusOr<SlurmIdentity> none = Read({});
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("SLURM_JOB_ID is not set"), std::string::npos);
  Env bad = kTask;
  bad["SLURM_NODEID"] = "one";
  EXPECT_NE(Read(bad).status().message().find("SLURM_NODEID='one' is not a number"),
            std::string::npos);
  bad = kTask;
  bad["CUDA_VISIBLE_DEVICES"] = "GPU-8f2c";
  EXPECT_NE(Read(bad).status().message().find("GPU UUIDs are not supported"), std::string::npos);
}

}  // namespace
}  // namespace ablate::worker
