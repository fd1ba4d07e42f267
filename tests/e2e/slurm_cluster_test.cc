// The test Slurm cluster itself (tests/util/slurm_cluster.h): it comes up with two idle nodes of
// eight fake GPUs each, runs a two-node job whose tasks see the GPUs Slurm gave them, reports a
// shape the partition can never hold, and leaves no daemon behind when stopped. And what this
// Slurm prints for the coordinator's own squeue and sacct calls parses as the pools expect
// (server/pools/slurm_output.h; the unit tests replay these outputs as recorded). A pilot whose
// pool names a container image is accepted by sbatch and its payload runs the worker through the
// runtime (stand-ins for apptainer and pyxis's srun, which are not installed here).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <thread>

#include "server/pools/pilot_job.h"
#include "server/pools/slurm_output.h"
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

// Submits `args` with sbatch --parsable; the job id, or "" with a test failure.
std::string Submit(const SlurmCluster& cluster, std::vector<std::string> args) {
  args.insert(args.begin(), {"sbatch", "--parsable", "-o", "/dev/null"});
  ProcessResult r = cluster.Run(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out.substr(0, r.out.find_first_of(";\n"));
}

TEST_F(SlurmClusterTest, CoordinatorsSqueueAndSacctOutputsParse) {
  const std::string tag = "--comment=ablate coordinator=rec pool=lab nodes=";
  // A one-node pilot that runs, a two-node one that waits for its nodes, and a three-node job
  // the two-node partition can never hold (reference/slurm.md §2: pending for ever).
  const std::string running = Submit(*cluster_, {"--job-name=ablate-rec", tag + "1 sweep=3", "-N1",
                                                  "--gres=gpu:8", "--time=10:00", "--no-requeue",
                                                  "--wrap", "sleep 120"});
  const std::string waiting = Submit(*cluster_, {"--job-name=ablate-rec", tag + "2 sweep=3", "-N2",
                                                  "--gres=gpu:8", "--time=5", "--wrap", "true"});
  const std::string never = Submit(*cluster_, {"--job-name=ablate-rec", "-N3", "--wrap", "true"});
  Submit(*cluster_, {"--job-name=someone-else", "-N1", "--gres=gpu:1", "--wrap", "sleep 120"});
  std::vector<std::string> squeue = SqueueArgs("ablate-rec");
  ProcessResult q;
  absl::StatusOr<std::vector<SlurmJob>> jobs;
  std::map<std::string, SlurmJob> by_id;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (std::chrono::steady_clock::now() < deadline) {
    q = cluster_->Run(squeue);
    jobs = ParseSqueue(q.out);
    ASSERT_TRUE(jobs.ok()) << jobs.status() << "\n" << q.out;
    by_id.clear();
    for (const SlurmJob& j : *jobs) by_id[std::to_string(j.id)] = j;
    if (by_id[running].running() && by_id[never].reason == "PartitionNodeLimit" &&
        by_id[waiting].reason == "Resources") {
      break;
    }
    std::this_thread::sleep_for(200ms);
  }
  std::cout << "squeue output (" << squeue.back() << "):\n" << q.out;
  ASSERT_EQ(jobs->size(), 3u) << "only this coordinator's job name: " << q.out;
  const SlurmJob& r = by_id[running];
  EXPECT_EQ(r.state, "RUNNING");
  EXPECT_EQ(r.reason, "None");
  EXPECT_EQ(r.nodes, 1);
  EXPECT_TRUE(r.node_list == "n1" || r.node_list == "n2") << r.node_list;
  ASSERT_TRUE(r.time_left_s.has_value());
  EXPECT_GT(*r.time_left_s, 500);
  EXPECT_LE(*r.time_left_s, 600);
  EXPECT_EQ(r.name, "ablate-rec");
  EXPECT_EQ(r.partition, "gpu");
  EXPECT_EQ(r.restart_count, 0);
  std::optional<PilotTag> pilot = ParsePilotTag(r.comment);
  ASSERT_TRUE(pilot.has_value()) << r.comment;
  EXPECT_EQ(pilot->nodes, 1);
  EXPECT_EQ(pilot->sweep_id, 3);
  const SlurmJob& w = by_id[waiting];
  EXPECT_TRUE(w.pending());
  EXPECT_EQ(w.reason, "Resources");
  EXPECT_EQ(w.nodes, 2);
  EXPECT_EQ(w.time_left_s, 300);  // a pending job's time left is its whole limit
  EXPECT_EQ(w.node_list, "");
  const SlurmJob& n = by_id[never];
  EXPECT_TRUE(n.pending());
  EXPECT_EQ(n.reason, "PartitionNodeLimit");
  EXPECT_EQ(n.time_left_s, std::nullopt) << "no --time on a partition without a limit";
  EXPECT_EQ(n.comment, "");

  // The pilot leaves; the coordinator asks sacct for its final state. This cluster keeps no
  // accounting (AccountingStorageType=accounting_storage/none), as many do: sacct says so.
  ASSERT_EQ(cluster_->Run({"scancel", running, waiting, never}).exit_code, 0);
  std::vector<std::string> sacct = SacctArgs({std::stoll(running)});
  ProcessResult a = cluster_->Run(sacct);
  std::cout << "sacct exit " << a.exit_code << ", stdout:\n" << a.out << "stderr:\n" << a.err;
  EXPECT_NE(a.exit_code, 0);
  EXPECT_TRUE(AccountingDisabled(a.err)) << a.err;
}

// An executable shell script at `path`.
void WriteScript(const std::string& path, const std::string& body) {
  WriteFile(path, "#!/bin/sh\n" + body);
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
}

// A one-node pool whose worker is a stand-in that writes its arguments and job id to
// RECORD/worker; the stand-in runtimes write theirs to RECORD/<name>.
class ContainerPilotTest : public SlurmClusterTest {
 protected:
  void SetUp() override {
    SlurmClusterTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    record_ = dir_.path() + "/record";
    bin_ = dir_.path() + "/bin";
    for (const std::string& d : {record_, bin_, dir_.path() + "/work"}) {
      std::filesystem::create_directories(d);
    }
    WriteScript(dir_.path() + "/worker",
                "printf '%s\\n' \"$SLURM_JOB_ID\" \"$@\" > \"$RECORD/worker\"\n");
    pool_.name = "lab";
    pool_.partition = "gpu";
    pool_.gpus_per_node = 8;
    pool_.gres = "gpu:8";
    pool_.worker.binary = dir_.path() + "/worker";
    pool_.worker.work_dir = dir_.path() + "/work";
  }

  // Submits the pool's pilot with PATH starting at the stand-ins and waits for it to finish.
  // The job id, or "" with a test failure.
  std::string RunPilot() {
    std::vector<std::string> args = PilotSbatchArgs(pool_, {"rec", "lab", 1, 3}, "head:7070");
    args[0] = "/usr/bin/sbatch";
    std::map<std::string, std::string> env = cluster_->Env();
    env["PATH"] = bin_ + ":/usr/sbin:/usr/bin:/sbin:/bin";
    env["RECORD"] = record_;
    ProcessResult sb = RunProcess(args, env);
    EXPECT_EQ(sb.exit_code, 0) << sb.err;
    const std::string job = sb.out.substr(0, sb.out.find_first_of(";\n"));
    EXPECT_TRUE(WaitGone(job, 30s)) << "job " << job << " still queued";
    return job;
  }

  // What the worker stand-in received: its job id, then its arguments, one a line.
  std::string WorkerLines(const std::string& job) {
    return job + "\n" +
           "--slurm\n--pool\nlab\n--coordinator\nhead:7070\n--work-dir\n" +
           pool_.worker.work_dir + "\n--cpu-slots\n1\n--idle-exit-ms\n300000\n";
  }

  std::string record_, bin_;
  PoolConfig pool_;
};

TEST_F(ContainerPilotTest, ApptainerPilotRunsTheWorkerInTheImage) {
  // Apptainer's stand-in: records its words, then runs what follows the image, as `exec` does.
  WriteScript(bin_ + "/apptainer",
              "printf '%s\\n' \"$@\" > \"$RECORD/apptainer\"\n"
              "while [ $# -gt 0 ] && [ \"$1\" != /images/ablate.sif ]; do shift; done\n"
              "shift; exec \"$@\"\n");
  pool_.container = {ContainerRuntime::kApptainer, "/images/ablate.sif", {"/data:/data:ro"}, {}};
  const std::string job = RunPilot();
  EXPECT_EQ(ReadFile(record_ + "/apptainer"),
            "exec\n--nv\n--bind\n/data:/data:ro\n--bind\n" + pool_.worker.work_dir + ":" +
                pool_.worker.work_dir + "\n/images/ablate.sif\n" + pool_.worker.binary +
                "\n--slurm\n--pool\nlab\n--coordinator\nhead:7070\n--work-dir\n" +
                pool_.worker.work_dir + "\n--cpu-slots\n1\n--idle-exit-ms\n300000\n");
  EXPECT_EQ(ReadFile(record_ + "/worker"), WorkerLines(job));
}

TEST_F(ContainerPilotTest, PyxisPilotGivesSrunTheImageAndMounts) {
  // srun with pyxis's options: the stand-in records them, drops them and runs the real srun.
  WriteScript(bin_ + "/srun",
              "printf '%s\\n' \"$@\" > \"$RECORD/srun\"\n"
              "for a do shift; case \"$a\" in --container-*) ;; *) set -- \"$@\" \"$a\";; esac; "
              "done\nexec /usr/bin/srun \"$@\"\n");
  pool_.container = {ContainerRuntime::kPyxis, "/images/ablate.sqsh", {}, {"--container-writable"}};
  const std::string job = RunPilot();
  EXPECT_EQ(ReadFile(record_ + "/srun"),
            "--kill-on-bad-exit=0\n--container-image=/images/ablate.sqsh\n--container-mounts=" +
                pool_.worker.work_dir + ":" + pool_.worker.work_dir +
                "\n--container-writable\n" + pool_.worker.binary +
                "\n--slurm\n--pool\nlab\n--coordinator\nhead:7070\n--work-dir\n" +
                pool_.worker.work_dir + "\n--cpu-slots\n1\n--idle-exit-ms\n300000\n");
  EXPECT_EQ(ReadFile(record_ + "/worker"), WorkerLines(job));
}

}  // namespace
}  // namespace ablate::testing
