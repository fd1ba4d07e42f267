// The pilot's sbatch command line: whole nodes, one task per node, no Slurm requeue, USR1 before
// the time limit, a name and comment that identify the coordinator, pool and sweep, and the
// worker in Slurm mode as the payload.
#include "server/pools/pilot_job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ablate {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;

PoolConfig Pool() {
  PoolConfig p;
  p.name = "h100";
  p.partition = "gpu";
  p.account = "speedrun";
  p.qos = "normal";
  p.gpus_per_node = 8;
  p.gres = "gpu:8";
  p.max_nodes = 4;
  p.time_limit_s = 7200;
  p.idle_exit_ms = 300000;
  p.signal_before_s = 120;
  p.sbatch_args = {"--exclusive"};
  p.worker.binary = "/opt/ablate/bin/ablate-worker";
  p.worker.work_dir = "/scratch/ablate";
  p.worker.data_dir = "/data/datasets";
  p.worker.args = {"--grace-ms", "it's 5000"};
  return p;
}

TEST(PilotJobTest, SbatchArgumentsOfATwoNodePilot) {
  std::vector<std::string> a = PilotSbatchArgs(Pool(), {"c0ffee", "h100", 2, 7}, "head:7070");
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ(a[0], "sbatch");
  EXPECT_EQ(a[1], "--parsable");
  for (const char* want :
       {"--job-name=ablate-c0ffee", "--comment=ablate coordinator=c0ffee pool=h100 nodes=2 sweep=7",
        "--partition=gpu", "--nodes=2", "--ntasks-per-node=1", "--account=speedrun",
        "--qos=normal", "--gres=gpu:8", "--time=0-02:00:00", "--no-requeue",
        "--signal=B:USR1@120", "--output=/scratch/ablate/slurm-%j.out", "--exclusive"}) {
    EXPECT_THAT(a, Contains(std::string(want)));
  }
  EXPECT_EQ(a.back(),
            "--wrap=exec srun --kill-on-bad-exit=0 '/opt/ablate/bin/ablate-worker' '--slurm' "
            "'--pool' 'h100' '--coordinator' 'head:7070' '--work-dir' '/scratch/ablate' "
            "'--cpu-slots' '1' '--idle-exit-ms' '300000' '--data-dir' '/data/datasets' "
            "'--grace-ms' 'it'\\''s 5000'");
}

TEST(PilotJobTest, OptionalKeysLeaveNoFlags) {
  PoolConfig p = Pool();
  p.account = p.qos = p.gres = "";
  p.time_limit_s = 0;
  p.sbatch_args.clear();
  std::vector<std::string> a = PilotSbatchArgs(p, {"c", "h100", 1, 1}, "h:1");
  for (const std::string& arg : a) {
    EXPECT_FALSE(arg.starts_with("--account") || arg.starts_with("--qos") ||
                 arg.starts_with("--gres") || arg.starts_with("--time"))
        << arg;
  }
}

// The payload with the worker in an image: pyxis's srun options before the worker, the worker's
// own folders mounted at their own path after the configured mounts.
TEST(PilotJobTest, PyxisPayloadRunsTheWorkerInTheImage) {
  PoolConfig p = Pool();
  p.worker.token_file = "/etc/ablate/worker.token";
  p.worker.args.clear();
  p.container = {ContainerRuntime::kPyxis, "nvcr.io#org/ablate:0.1.0", {"/srv/models:/models:ro"},
                 {"--container-writable"}};
  EXPECT_EQ(PilotPayload(p, "head:7070"),
            "exec srun --kill-on-bad-exit=0 "
            "'--container-image=nvcr.io#org/ablate:0.1.0' "
            "'--container-mounts=/srv/models:/models:ro,/scratch/ablate:/scratch/ablate,"
            "/data/datasets:/data/datasets,/etc/ablate/worker.token:/etc/ablate/worker.token' "
            "'--container-writable' "
            "'/opt/ablate/bin/ablate-worker' '--slurm' '--pool' 'h100' '--coordinator' "
            "'head:7070' '--work-dir' '/scratch/ablate' '--cpu-slots' '1' '--idle-exit-ms' "
            "'300000' '--data-dir' '/data/datasets' '--token-file' '/etc/ablate/worker.token'");
}

TEST(PilotJobTest, ApptainerPayloadBindsAndPassesTheGpus) {
  PoolConfig p = Pool();
  p.worker.args.clear();
  // /scratch covers the work dir; the data dir gets its own bind.
  p.container = {ContainerRuntime::kApptainer, "/shared/images/ablate.sif", {"/scratch"}, {}};
  EXPECT_EQ(PilotPayload(p, "head:7070"),
            "exec srun --kill-on-bad-exit=0 'apptainer' 'exec' '--nv' '--bind' '/scratch' "
            "'--bind' '/data/datasets:/data/datasets' '/shared/images/ablate.sif' "
            "'/opt/ablate/bin/ablate-worker' '--slurm' '--pool' 'h100' '--coordinator' "
            "'head:7070' '--work-dir' '/scratch/ablate' '--cpu-slots' '1' '--idle-exit-ms' "
            "'300000' '--data-dir' '/data/datasets'");
  p.gpus_per_node = 0;  // a CPU pool: no --nv (it fails on nodes without a driver)
  p.worker.data_dir = "";
  EXPECT_TRUE(PilotPayload(p, "h:1").starts_with(
      "exec srun --kill-on-bad-exit=0 'apptainer' 'exec' '--bind' '/scratch' "
      "'/shared/images/ablate.sif' '/opt/ablate/bin/ablate-worker' "))
      << PilotPayload(p, "h:1");
  // A mount of the user's own at or above the data dir decides what that path holds.
  p.worker.data_dir = "/data/datasets";
  p.container.mounts = {"/scratch", "/srv/data:/data:ro"};
  EXPECT_TRUE(PilotPayload(p, "h:1").starts_with(
      "exec srun --kill-on-bad-exit=0 'apptainer' 'exec' '--bind' '/scratch' '--bind' "
      "'/srv/data:/data:ro' '/shared/images/ablate.sif' "))
      << PilotPayload(p, "h:1");
}

TEST(PilotJobTest, NoContainerNoLauncherWords) {
  PoolConfig p = Pool();
  EXPECT_TRUE(PilotPayload(p, "h:1").starts_with(
      "exec srun --kill-on-bad-exit=0 '/opt/ablate/bin/ablate-worker' '--slurm'"));
}

TEST(PilotJobTest, TestOnlyAsksForTheSameShape) {
  EXPECT_THAT(PilotTestArgs(Pool(), 3),
              ElementsAre("sbatch", "--test-only", "--partition=gpu", "--nodes=3",
                          "--ntasks-per-node=1", "--account=speedrun", "--qos=normal",
                          "--gres=gpu:8", "--time=0-02:00:00", "--exclusive", "--wrap=true"));
}

}  // namespace
}  // namespace ablate
