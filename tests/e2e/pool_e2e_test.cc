// Slurm pools end to end (issue 15): a real Slurm cluster (tests/util/slurm_cluster.h: slurmctld
// and two slurmd with eight fake GPUs each), a real coordinator started with --pools, and the
// real ablate-worker running as pilots inside Slurm allocations (`srun ablate-worker --slurm`).
// CPU runs use the built-in CPU trainer at tiny scale; the 16-GPU run uses the gang stand-in
// trainer (tests/e2e/fake_gang_trainer.sh), as there are no GPUs here. Skipped, naming the
// reason, where Slurm is not installed or the tests do not run as root.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <functional>
#include <set>
#include <sstream>
#include <thread>

#include "tests/util/cli_client.h"
#include "tests/util/slurm_cluster.h"
#include "tests/util/sqlite_query.h"
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
    cluster_ = SlurmCluster::Start(Root() + "/slurm", cluster_options_, &error);
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
  std::string PoolsFile(const std::vector<std::string>& worker_args, int max_nodes = 4,
                        const std::string& idle_exit = "3s") {
    std::string args;
    for (const std::string& a : worker_args) args += (args.empty() ? "" : ", ") + json(a).dump();
    std::string path = Root() + "/pools.yaml";
    WriteFile(path, "pools:\n  - name: lab\n    kind: slurm\n    partition: gpu\n"
                    "    gpus_per_node: 8\n    max_nodes: " + std::to_string(max_nodes) +
                        "\n    time_limit: 30:00\n    idle_exit: " + idle_exit + "\n    worker: {binary: " ABLATE_WORKER_BIN
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

  // The first column of the first row of `sql` on the coordinator's database (read-only; WAL
  // lets it read while the coordinator writes); -1 when it cannot be read.
  int64_t Query(const std::string& sql) { return QueryInt(Root() + "/ablate.db", sql); }
  int64_t MetricRows(int run_id) {
    return Query("SELECT count(*) FROM metrics WHERE run_id = " + std::to_string(run_id));
  }

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

  // The processes of Slurm job `job` on this machine (their environment names it), found in
  // /proc: the tasks a killed slurmd leaves running.
  static std::vector<pid_t> JobProcesses(int64_t job) {
    std::vector<pid_t> out;
    const std::string wanted = "SLURM_JOB_ID=" + std::to_string(job);
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string env = ReadFile(e.path().string() + "/environ");
      std::replace(env.begin(), env.end(), '\0', '\n');
      if (("\n" + env + "\n").find("\n" + wanted + "\n") != std::string::npos) {
        out.push_back(static_cast<pid_t>(std::stol(name)));
      }
    }
    return out;
  }

  TempDir root_;
  SlurmClusterOptions cluster_options_;  // set before SetUp to change it
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

// Issue 23: a script sweep's `pool:` is honoured: refused while the pool's pilots run no scripts,
// and run in the pool's pilots once they do (a script that brings its own data: no dataset).
TEST_F(PoolE2eTest, ScriptSweepRunsInThePoolsPilotsOrIsRefused) {
  WriteFile(Root() + "/t.py",
            "import os\nprint('step:1/2 train_loss:5.0 train_time:10ms step_avg:10.00ms')\n"
            "print('step:2/2 val_loss:4.0 train_time:30ms step_avg:15.00ms')\n");
  WriteFile(Root() + "/spec.yaml",
            "name: script-pool\nbaseline: {script: t.py}\ngpus_per_run: 0\npool: lab\n"
            "target_val_loss: 4.5\nseeds: 2\n");
  StartCoordinator(PoolsFile({"--grace-ms", "2000"}, /*max_nodes=*/1));
  ProcessResult r = cli_.Run({"submit", Root() + "/spec.yaml"});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("pool: 'lab': its pilots run no scripts"), std::string::npos) << r.err;
  EXPECT_TRUE(cli_.Json({"sweeps"})["sweeps"].empty());
  coordinator_->Signal(SIGTERM);
  coordinator_->Wait(10s);
  StartCoordinator(PoolsFile({"--grace-ms", "2000", "--allow-scripts"}, /*max_nodes=*/1));
  r = cli_.Run({"submit", Root() + "/spec.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int id = 1; id <= 2; ++id) {
    json run = WaitRun(id, Succeeded, 240s);
    ASSERT_TRUE(Succeeded(run)) << run.dump();
    EXPECT_TRUE(run["worker_id"].get<std::string>().starts_with("slurm/lab/")) << run.dump();
    EXPECT_GT(Int(run["attempts"][0]["slurm_job_id"]), 0);
  }
}

TEST_F(PoolE2eTest, ScancelOfAPilotRequeuesItsRunAtOnceUncharged) {
  // Lease 60 s: a requeue within seconds comes from the worker's Release or from squeue.
  StartCoordinator(PoolsFile({"--grace-ms", "2000"}, /*max_nodes=*/1), "60000");
  cli_.Submit(Root() + "/spec.yaml", CpuSpec("scancel", 1, 100));
  json run = WaitRun(1, [](const json& r) { return r["state"] == "RUN_RUNNING"; }, 120s);
  ASSERT_EQ(run["attempts"].size(), 1u) << run.dump();
  const int64_t job = Int(run["attempts"][0]["slurm_job_id"]);
  ASSERT_GT(job, 0);
  EXPECT_EQ(run["attempts"][0]["slurm_step_id"], "0") << "the pilot's srun step runs the trainer";
  const std::string worker = run["worker_id"];
  // `ablate workers` and `ablate run` show where it runs: the pool, the job (and step), the time
  // left once squeue has said (time_limit 30:00).
  json w = cli_.WaitFor({"workers"}, [&](const json& ws) {
    for (const json& x : ws["workers"]) {
      if (x["id"] == worker) return Int(x["slurm_time_left_s"]) > 0;
    }
    return false;
  }, 30s);
  for (const json& x : w["workers"]) {
    if (x["id"] != worker) continue;
    EXPECT_EQ(x["slurm_pool"], "lab");
    EXPECT_EQ(Int(x["slurm_job_id"]), job);
    EXPECT_LE(Int(x["slurm_time_left_s"]), 30 * 60);
  }
  ProcessResult text = cli_.Run({"workers"});
  EXPECT_NE(text.out.find("pool lab, job " + std::to_string(job) + ", "), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(" left"), std::string::npos) << text.out;
  text = cli_.Run({"run", "1"});
  EXPECT_NE(text.out.find(" " + std::to_string(job) + ".0 "), std::string::npos) << text.out;
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
  const auto requeued_after = std::chrono::steady_clock::now() - preempted_at;
  // The pilot drains on USR1 and says so in its output. The coordinator hears of it only if the
  // draining heartbeat arrives before its squeue poll fences the allocation, so its log is not
  // the place to look.
  const std::string pilot_out = Root() + "/pilots/slurm-" + std::to_string(job) + ".out";
  auto drain_deadline = std::chrono::steady_clock::now() + 60s;
  while (ReadFile(pilot_out).find("draining: no new runs") == std::string::npos &&
         std::chrono::steady_clock::now() < drain_deadline) {
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_NE(ReadFile(pilot_out).find("draining: no new runs"), std::string::npos)
      << "USR1 did not make the pilot drain: " << ReadFile(pilot_out);
  EXPECT_LT(requeued_after, 30s)
      << "requeued by the lease (60 s), not when Slurm preempted the pilot";
  run = WaitRun(1, Succeeded, 300s);
  EXPECT_EQ(run.value("attempts_used", 0), 0);
  EXPECT_EQ(run["attempts"].size(), 2u);
}

TEST_F(PoolE2eTest, RestartedCoordinatorFindsItsAllocationsAndLosesNoPoint) {
  // idle_exit 60 s: a pilot waiting for its next run while the coordinator is down or busy
  // restarting must not leave, or a new allocation would be needed for a reason other than
  // the restart. Lease 60 s: nothing is requeued by the lease while the coordinator is away.
  StartCoordinator(PoolsFile({"--grace-ms", "2000"}, /*max_nodes=*/2, "60s"), "60000");
  const std::string fixed = address_.substr(address_.rfind(':') + 1);
  cli_.Submit(Root() + "/spec.yaml", CpuSpec("restart", 4, 60));
  // Mid-sweep: a run in a pilot with points stored, the other pilot asked for, and no run just
  // being assigned (an Assignment the coordinator dies before sending is requeued by the lease).
  std::set<std::string> before;
  std::set<int> running_at_kill;
  auto deadline = std::chrono::steady_clock::now() + 180s;
  bool mid_run = false;
  while (!mid_run && std::chrono::steady_clock::now() < deadline) {
    bool assigning = false;
    running_at_kill.clear();
    for (int id = 1; id <= 4; ++id) {
      json r = cli_.Json({"run", std::to_string(id)});
      if (!r.is_object()) continue;
      assigning = assigning || r["state"] == "RUN_ASSIGNED";
      if (r["state"] != "RUN_RUNNING") continue;
      running_at_kill.insert(id);
      mid_run = mid_run || MetricRows(id) >= 3;
    }
    before.clear();
    for (const std::string& j : Jobs()) before.insert(j.substr(0, j.find(' ')));
    mid_run = mid_run && !assigning && before.size() == 2;
    if (!mid_run) std::this_thread::sleep_for(200ms);
  }
  ASSERT_TRUE(mid_run) << "no run stored points with both pilots asked for";
  coordinator_->Signal(SIGKILL);
  coordinator_->Wait(10s);
  std::this_thread::sleep_for(1500ms);  // the trainers go on; the workers keep their points
  StartCoordinator(PoolsFile({"--grace-ms", "2000"}, /*max_nodes=*/2, "60s"), "60000",
                   "127.0.0.1:" + fixed);
  ASSERT_EQ(address_, "127.0.0.1:" + fixed);
  // It finds its allocations again: `ablate pools` lists them, and it asks Slurm for no other.
  cli_.WaitFor({"pools"}, [&](const json& p) {
    std::set<std::string> seen;
    for (const json& a : p["pools"][0]["allocations"]) seen.insert(std::to_string(Int(a["job_id"])));
    return seen == before;
  }, 60s);
  std::set<std::string> after;
  for (int id = 1; id <= 4; ++id) {
    json run;
    auto until = std::chrono::steady_clock::now() + 240s;
    while (std::chrono::steady_clock::now() < until) {
      for (const std::string& j : Jobs()) after.insert(j.substr(0, j.find(' ')));
      run = cli_.Json({"run", std::to_string(id)});
      if (run.is_object() && Succeeded(run)) break;
      std::this_thread::sleep_for(200ms);
    }
    ASSERT_TRUE(Succeeded(run)) << run.dump();
    EXPECT_EQ(run.value("attempts_used", 0), 0);
    const json& attempts = run["attempts"];
    if (running_at_kill.count(id)) {
      EXPECT_EQ(attempts.size(), 1u) << "run " << id << " restarted: " << run.dump();
    }
    for (size_t i = 0; i + 1 < attempts.size(); ++i) {
      EXPECT_EQ(attempts[i]["state"], "lost") << run.dump();
    }
    const json& last = attempts.back();
    EXPECT_TRUE(before.count(std::to_string(Int(last["slurm_job_id"]))))
        << "run " << id << " ran in a new allocation: " << run.dump();
    // Steps 0..60 of the attempt that succeeded, each once.
    const std::string attempt = std::to_string(Int(last["id"]));
    EXPECT_EQ(Query("SELECT count(*) FROM metrics WHERE attempt_id = " + attempt), 61)
        << "run " << id;
    EXPECT_EQ(Query("SELECT count(DISTINCT step) FROM metrics WHERE attempt_id = " + attempt), 61)
        << "run " << id;
  }
  for (const std::string& job : after) {
    EXPECT_TRUE(before.count(job)) << "job " << job << " was submitted after the restart";
  }
  EXPECT_EQ(coordinator_->Stderr().find("submitted pilot job"), std::string::npos)
      << coordinator_->Stderr();
}

// Slurm declares a node dead SlurmdTimeout after its slurmd stops answering (reference/slurm.md
// §2): 10 s here instead of 30, so that the test waits less.
class PoolNodeFailureE2eTest : public PoolE2eTest {
 protected:
  PoolNodeFailureE2eTest() { cluster_options_.slurmd_timeout_s = 10; }
};

TEST_F(PoolNodeFailureE2eTest, KilledSlurmdRequeuesItsRunWhenSlurmMarksTheNodeDown) {
  // A slurmd killed mid-run: its node's tasks (the pilot's worker and trainer) go on and the
  // worker keeps its lease (120 s), so only Slurm can tell the coordinator: once it marks the
  // node down the allocation leaves the queue (NODE_FAIL, --no-requeue) and the next squeue
  // fences the worker. The run is requeued uncharged and starts again in a new allocation.
  StartCoordinator(PoolsFile({"--grace-ms", "2000"}, /*max_nodes=*/1), "120000");
  cli_.Submit(Root() + "/spec.yaml", CpuSpec("node-fail", 1, 5000));
  json run = WaitRun(1, [](const json& r) { return r["state"] == "RUN_RUNNING"; }, 120s);
  ASSERT_EQ(run["attempts"].size(), 1u) << run.dump();
  const int64_t job = Int(run["attempts"][0]["slurm_job_id"]);
  ASSERT_GT(job, 0) << run.dump();
  std::string node = cluster_->Run({"squeue", "-h", "-j", std::to_string(job), "-o", "%N"}).out;
  node = node.substr(0, node.find('\n'));
  ASSERT_TRUE(node == "n1" || node == "n2") << "pilot " << job << " on '" << node << "'";
  const int index = node == "n1" ? 0 : 1;
  const auto killed_at = std::chrono::steady_clock::now();
  cluster_->KillNode(index);
  run = WaitRun(1, [](const json& r) {
    return !r["attempts"].empty() && r["attempts"][0]["state"] == "lost";
  }, 100s);
  const auto requeued_after = std::chrono::steady_clock::now() - killed_at;
  ASSERT_EQ(run["attempts"][0]["state"], "lost") << run.dump();
  EXPECT_LT(requeued_after, 100s) << "requeued by the lease (120 s), not when Slurm saw the node";
  EXPECT_TRUE(cluster_->WaitNodeState(index, "down", 10s))
      << "requeued before Slurm marked " << node << " down";
  EXPECT_NE(coordinator_->Stderr().find("fenced: its Slurm allocation is no longer running"),
            std::string::npos)
      << coordinator_->Stderr();
  EXPECT_EQ(run.value("attempts_used", 0), 0) << "a lost node is not the run's fault";
  run = WaitRun(1, [](const json& r) {
    return r["state"] == "RUN_RUNNING" && r["attempts"].size() == 2;
  }, 120s);
  ASSERT_EQ(run["attempts"].size(), 2u) << run.dump();
  EXPECT_NE(Int(run["attempts"][1]["slurm_job_id"]), job) << "started again in a new allocation";
  EXPECT_EQ(run.value("attempts_used", 0), 0);
  std::cerr << "requeued " << std::chrono::duration_cast<std::chrono::seconds>(requeued_after).count()
            << " s after slurmd was killed\n";

  ProcessResult c = cli_.Run({"cancel", "1"});
  EXPECT_EQ(c.exit_code, 0) << c.err;
  // Back with its slurmd, the node kills what is left of the failed job.
  cluster_->RestartNode(index);
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!JobProcesses(job).empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(200ms);
  }
  for (pid_t pid : JobProcesses(job)) {
    ADD_FAILURE() << "process " << pid << " of failed job " << job << " outlived it";
    kill(pid, SIGKILL);
  }
}

}  // namespace
}  // namespace ablate::testing
