// The test Slurm cluster itself (tests/util/slurm_cluster.h): it comes up with two idle nodes of
// eight fake GPUs each, runs a two-node job whose tasks see the GPUs Slurm gave them, reports a
// shape the partition can never hold, and leaves no daemon behind when stopped.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "tests/util/slurm_cluster.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

using namespace std::chrono_literals;

class SlurmClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SlurmCluster::UnavailableReason(); !why.empty()) {
      GTEST_SKIP() << "no local Slurm: " << why;
    }
    std::string error;
    cluster_ = SlurmCluster::Start(dir_.path(), {}, &error);
    ASSERT_NE(cluster_, nullptr) << error;
  }

  // Polls squeue until the job has left the queue; false after `timeout`.
  bool WaitGone(const std::string& job, std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      ProcessResult q = cluster_->Run({"squeue", "-h", "-j", job, "-o", "%T"});
      if (q.out.empty()) return true;
      std::this_thread::sleep_for(100ms);
    }
    return false;
  }

  TempDir dir_;
  std::unique_ptr<SlurmCluster> cluster_;
};

TEST_F(SlurmClusterTest, TwoNodeJobSeesItsGpus) {
  const std::string out = dir_.path() + "/job.out";
  ProcessResult sb = cluster_->Run(
      {"sbatch", "--parsable", "-N2", "--ntasks-per-node=1", "--gres=gpu:8", "-o", out, "--wrap",
       "srun sh -c 'echo node=$SLURM_NODEID gpus=$CUDA_VISIBLE_DEVICES' | sort"});
  ASSERT_EQ(sb.exit_code, 0) << sb.err;
  const std::string job = sb.out.substr(0, sb.out.find_first_of(";\n"));
  ASSERT_TRUE(WaitGone(job, 30s)) << "job " << job << " still queued";
  EXPECT_EQ(ReadFile(out), "node=0 gpus=0,1,2,3,4,5,6,7\nnode=1 gpus=0,1,2,3,4,5,6,7\n");
}

TEST_F(SlurmClusterTest, ShapeThePartitionCannotHoldIsRefusedByTestOnly) {
  ProcessResult three = cluster_->Run(
      {"sbatch", "--test-only", "-p", "gpu", "-N3", "--gres=gpu:8", "--wrap", "true"});
  EXPECT_NE(three.exit_code, 0);
  EXPECT_NE(three.err.find("Requested node configuration is not available"), std::string::npos)
      << three.err;
  ProcessResult two = cluster_->Run(
      {"sbatch", "--test-only", "-p", "gpu", "-N2", "--gres=gpu:8", "--wrap", "true"});
  EXPECT_EQ(two.exit_code, 0) << two.err;
}

TEST_F(SlurmClusterTest, StopLeavesNoDaemon) {
  const std::string pid_file = dir_.path() + "/slurmctld.pid";
  ASSERT_FALSE(ReadFile(pid_file).empty());
  const pid_t ctld = std::stoi(ReadFile(pid_file));
  cluster_->Stop();
  EXPECT_NE(kill(ctld, 0), 0) << "slurmctld " << ctld << " still running after Stop()";
}

}  // namespace
}  // namespace ablate::testing
