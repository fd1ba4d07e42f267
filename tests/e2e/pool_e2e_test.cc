// Slurm pools end to end (issue 15): a real Slurm cluster (tests/util/slurm_cluster.h: slurmctld
// and two slurmd with eight fake GPUs each), a real coordinator started with --pools, and the
// real ablate-worker running as pilots inside Slurm allocations (`srun ablate-worker --slurm`).
// CPU runs use the built-in CPU trainer at tiny scale; the 16-GPU run uses the gang stand-in
// trainer (tests/e2e/fake_gang_trainer.sh), as there are no GPUs here. Skipped, naming the
// reason, where Slurm is not installed or the tests do not run as root.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "tests/util/cli_client.h"
#include "tests/util/slurm_cluster.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

// `seeds` CPU runs of the tiny r9 model on the pool.
std::string CpuSpec(const std::string& name, int seeds, int iterations) {
  return "name: " + name +
         "\nbaseline: {preset: r9-shortcuts, scale: tiny, set: {num_iterations: " +
         std::to_string(iterations) +
         ", val_every: 5, val_tokens: 4096}}\nseeds: " + std::to_string(seeds) +
         "\ngpus_per_run: 0\ndataset: debian-text\nmax_attempts: 1\npool: lab\n";
}

std::string GpuSpec(const std::string& name, int gpus) {
  return "name: " + name +
         "\nbaseline: {preset: r9-shortcuts, scale: tiny, set: {num_iterations: 8, val_every: 4, "
         "untimed_steps: 0}}\nseeds: 1\ngpus_per_run: " + std::to_string(gpus) +
         "\ndataset: debian-text\nmax_attempts: 1\npool: lab\n";
}

int64_t Int(const json& j) {  // proto3 JSON writes int64 as a string, and leaves out zeros
  if (j.is_null()) return 0;
  return j.is_string() ? std::stoll(j.get<std::string>()) : j.get<int64_t>();
}

class PoolE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = SlurmCluster::UnavailableReason(); !why.empty()) {
      GTEST_SKIP() << "no local Slurm: " << why;
    }
    // munged wants every folder above its socket traversable.
    fs::permissions(Root(), fs::perms::owner_all | fs::perms::others_exec |
                                fs::perms::group_exec | fs::perms::others_read |
                                fs::perms::group_read);
    fs::create_directories(Root() + "/slurm");
    std::string error;
    cluster_ = SlurmCluster::Start(Root() + "/slurm", {}, &error);
    ASSERT_NE(cluster_, nullptr) << error;
    ProcessResult data =
        RunProcess({"/bin/bash", ABLATE_SOURCE_DIR "/tests/data/make_debian_text.sh",
                    Root() + "/datasets/debian-text"},
                   {{"ABLATE_DATA", ABLATE_DATA_BIN}}, 120s);
    ASSERT_EQ(data.exit_code, 0) << data.err;
  }

  void TearDown() override {
    if (coordinator_) {
      coordinator_->Signal(SIGTERM);
      coordinator_->Wait(10s);
    }
    if (cluster_) cluster_->Stop();  // pilots go with their jobs
    if (!HasFailure() || !cluster_) return;
    for (const auto& e : fs::recursive_directory_iterator(Root())) {
      std::string name = e.path().filename().string();
      if (e.path().extension() != ".err" && !name.starts_with("slurm-") &&
          name != "slurmctld.log") {
        continue;
      }
      if (!e.is_regular_file()) continue;
      std::string text = ReadFile(e.path().string());
      if (text.size() > 3000) text = text.substr(text.size() - 3000);
      std::cerr << "---- " << e.path().string() << "\n" << text << "\n";
    }
  }

  const std::string& Root() const { return root_.path(); }

  // The pools file: one pool 'lab' on partition gpu, pilots running this build's worker.
  std::string PoolsFile(const std::vector<std::string>& worker_args, int max_nodes = 4) {
    std::string args;
    for (const std::string& a : worker_args) args += (args.empty() ? "" : ", ") + json(a).dump();
    std::string path = Root() + "/pools.yaml";
    WriteFile(path, "pools:\n  - name: lab\n    kind: slurm\n    partition: gpu\n"
                    "    gpus_per_node: 8\n    max_nodes: " + std::to_string(max_nodes) +
                        "\n    idle_exit: 3s\n    worker: {binary: " ABLATE_WORKER_BIN
                        ", work_dir: " + Root() + "/pilots, data_dir: " + Root() +
                        "/datasets, cpu_slots: 1, args: [" + args + "]}\n");
    return path;
  }

  // `listen` "127.0.0.1:0" picks a free port; a restart passes the port it had, as pilots dial it.
  void StartCoordinator(const std::string& pools_file, const std::string& lease_ms = "30000",
                        const std::string& listen = "127.0.0.1:0") {
    fs::remove(Root() + "/port");
    coordinator_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_COORDINATOR_BIN, "--listen", listen, "--data-dir",
                                 Root(), "--port-file", Root() + "/port", "--http", "off",
                                 "--lease-ms", lease_ms, "--heartbeat-ms", "200",
                                 "--cancel-grace-ms", "2000", "--pools", pools_file,
                                 "--pools-poll-ms", "500", "--coordinator-id", "e2e"},
        Root(), cluster_->Env());
    for (int i = 0; i < 500 && !fs::exists(Root() + "/port"); ++i) std::this_thread::sleep_for(20ms);
    std::string port = ReadFile(Root() + "/port");
    ASSERT_FALSE(port.empty()) << coordinator_->Stderr();
    address_ = "127.0.0.1:" + port.substr(0, port.find('\n'));
    cli_ = CliClient(ABLATE_CLI_BIN, address_);
  }

  json WaitRun(int id, const std::function<bool(const json&)>& done,
               std::chrono::seconds timeout = 120s) {
    return cli_.WaitFor({"run", std::to_string(id)}, done, timeout);
  }
  static bool Succeeded(const json& r) { return r["state"] == "RUN_SUCCEEDED"; }

  // The pilot jobs Slurm still has (squeue, this cluster).
  std::vector<std::string> Jobs() {
    ProcessResult q = cluster_->Run({"squeue", "-h", "-o", "%i %D %T"});
    std::vector<std::string> out;
    std::stringstream in(q.out);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out.push_back(line);
    }
    return out;
  }

  bool WaitNoJobs(std::chrono::seconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Jobs().empty()) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  TempDir root_;
  std::string address_;
  std::unique_ptr<SlurmCluster> cluster_;
  std::unique_ptr<Subprocess> coordinator_;
  CliClient cli_;
};

TEST_F(PoolE2eTest, SixRunSweepRunsInPilotsThatLeaveWhenIdle) {
  StartCoordinator(PoolsFile({"--grace-ms", "2000"}, /*max_nodes=*/2));
  cli_.Submit(Root() + "/spec.yaml", CpuSpec("six", 6, 10));
  std::set<int64_t> jobs;
  for (int id = 1; id <= 6; ++id) {
    json run = WaitRun(id, Succeeded, 240s);
    ASSERT_TRUE(Succeeded(run)) << run.dump();
    EXPECT_TRUE(run["worker_id"].get<std::string>().starts_with("slurm/lab/")) << run.dump();
    EXPECT_EQ(run.value("attempts_used", 0), 0);
    ASSERT_EQ(run["attempts"].size(), 1u);
    int64_t job = Int(run["attempts"][0]["slurm_job_id"]);
    EXPECT_GT(job, 0) << "the attempt records the Slurm job it ran in";
    jobs.insert(job);
  }
  EXPECT_LE(jobs.size(), 2u) << "max_nodes 2: at most two one-node pilots";
  json pools = cli_.Json({"pools"});
  ASSERT_EQ(pools["pools"].size(), 1u) << pools.dump();
  EXPECT_EQ(pools["pools"][0]["name"], "lab");
  EXPECT_TRUE(WaitNoJobs(30s)) << "pilots still held after the sweep (idle_exit 3s)";
  json workers = cli_.Json({"workers"});
  ASSERT_FALSE(workers["workers"].empty());
  EXPECT_TRUE(workers["workers"][0]["slurm_allocation"].get<std::string>().starts_with("lab/"));
}

TEST_F(PoolE2eTest, SweepSlurmCanNeverRunIsRejectedAtSubmit) {
  StartCoordinator(PoolsFile({}, /*max_nodes=*/4));
  WriteFile(Root() + "/spec.yaml", GpuSpec("three-nodes", 24));
  ProcessResult r = cli_.Run({"submit", Root() + "/spec.yaml"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("Requested node configuration is not available"), std::string::npos)
      << r.err;
  WriteFile(Root() + "/spec.yaml", "name: nowhere\nbaseline: {preset: r9-shortcuts, scale: tiny}"
                                   "\ngpus_per_run: 0\npool: h200\n");
  r = cli_.Run({"submit", Root() + "/spec.yaml"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("'h200' is not a pool of this coordinator (its pools: lab)"),
            std::string::npos)
      << r.err;
  json sweeps = cli_.Json({"sweeps"});
  EXPECT_TRUE(sweeps["sweeps"].empty()) << "nothing stored from a rejected sweep";
  EXPECT_TRUE(Jobs().empty()) << "nothing asked of Slurm for a rejected sweep";
}

TEST_F(PoolE2eTest, ScancelOfAPilotRequeuesItsRunAtOnceUncharged) {
  // Lease 60 s: a requeue within seconds comes from the worker's Release or from squeue.
  StartCoordinator(PoolsFile({"--grace-ms", "2000"}, /*max_nodes=*/1), "60000");
  cli_.Submit(Root() + "/spec.yaml", CpuSpec("scancel", 1, 100));
  json run = WaitRun(1, [](const json& r) { return r["state"] == "RUN_RUNNING"; }, 120s);
  ASSERT_EQ(run["attempts"].size(), 1u) << run.dump();
  const int64_t job = Int(run["attempts"][0]["slurm_job_id"]);
  ASSERT_GT(job, 0);
  auto cancelled_at = std::chrono::steady_clock::now();
  ProcessResult c = cluster_->Run({"scancel", std::to_string(job)});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  run = WaitRun(1, [](const json& r) {
    return !r["attempts"].empty() && r["attempts"][0]["state"] == "lost";
  }, 30s);
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, 20s)
      << "requeued by the lease (60 s), not at once";
  run = WaitRun(1, Succeeded, 240s);
  EXPECT_EQ(run.value("attempts_used", 0), 0) << "an infrastructure failure is not charged";
  ASSERT_EQ(run["attempts"].size(), 2u) << run.dump();
  EXPECT_NE(Int(run["attempts"][1]["slurm_job_id"]), job) << "finished in a new allocation";
}

TEST_F(PoolE2eTest, SixteenGpuRunBecomesOneTwoNodeAllocation) {
  const std::string trainer = Root() + "/fake-ablate-train";
  fs::copy_file(ABLATE_SOURCE_DIR "/tests/e2e/fake_gang_trainer.sh", trainer);
  fs::permissions(trainer, fs::perms::owner_all);
  StartCoordinator(PoolsFile({"--trainer", trainer, "--grace-ms", "2000"}, /*max_nodes=*/2));
  cli_.Submit(Root() + "/spec.yaml", GpuSpec("gang", 16));
  std::set<std::string> seen;
  json run;
  auto deadline = std::chrono::steady_clock::now() + 120s;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const std::string& j : Jobs()) seen.insert(j.substr(j.find(' ') + 1));
    run = cli_.Json({"run", "1"});
    if (run.is_object() && Succeeded(run)) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(Succeeded(run)) << run.dump();
  EXPECT_TRUE(seen.count("2 RUNNING")) << "no 2-node allocation seen running";
  EXPECT_FALSE(seen.count("1 RUNNING")) << "a one-node pilot was asked for a 16-GPU run";
  const std::string worker = run["worker_id"];
  EXPECT_TRUE(worker.starts_with("slurm/lab/") && worker.ends_with("/0")) << worker;
  EXPECT_EQ(run.value("attempts_used", 0), 0);
}

TEST_F(PoolE2eTest, PreemptedPilotDrainsAndItsRunIsRequeuedUncharged) {
  // Partition urgent (PriorityTier 2) preempts gpu (REQUEUE, GraceTime 15 s): Slurm sends the
  // pilot USR1 at once and SIGTERM 15 s later (reference/slurm.md §2). Seen with Slurm 22.05:
  // squeue stops showing the preempted pilot as running at once, so the coordinator requeues the
  // run at its next poll, long before the SIGTERM (the SIGTERM release is covered by
  // worker_release_test and dispatcher_pools_test); the drained pilot then leaves by itself.
  StartCoordinator(PoolsFile({"--grace-ms", "2000"}, /*max_nodes=*/1), "60000");
  cli_.Submit(Root() + "/spec.yaml", CpuSpec("preempt", 1, 300));
  json run = WaitRun(1, [](const json& r) { return r["state"] == "RUN_RUNNING"; }, 120s);
  const int64_t job = Int(run["attempts"][0]["slurm_job_id"]);
  ASSERT_GT(job, 0) << run.dump();
  ProcessResult urgent = cluster_->Run({"sbatch", "--parsable", "-p", "urgent", "-N2",
                                        "--gres=gpu:8", "-o", "/dev/null", "--wrap", "sleep 25"});
  ASSERT_EQ(urgent.exit_code, 0) << urgent.err;
  auto preempted_at = std::chrono::steady_clock::now();
  run = WaitRun(1, [](const json& r) {
    return !r["attempts"].empty() && r["attempts"][0]["state"] == "lost";
  }, 60s);
  ASSERT_EQ(run["attempts"][0]["state"], "lost") << run.dump();
  EXPECT_NE(coordinator_->Stderr().find("is draining: no new runs"), std::string::npos)
      << "USR1 did not make the pilot drain";
  EXPECT_LT(std::chrono::steady_clock::now() - preempted_at, 30s)
      << "requeued by the lease (60 s), not when Slurm preempted the pilot";
  run = WaitRun(1, Succeeded, 300s);
  EXPECT_EQ(run.value("attempts_used", 0), 0);
  EXPECT_EQ(run["attempts"].size(), 2u);
}

}  // namespace
}  // namespace ablate::testing
