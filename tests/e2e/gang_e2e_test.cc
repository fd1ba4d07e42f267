// Multi-node (gang) runs end to end over real processes: an ablate-coordinator, two ablate-worker
// daemons and the `ablate` CLI. Two things are faked, because this machine has neither GPUs nor
// NCCL: nvidia-smi (tests/e2e/fake_nvidia_smi.sh: eight GPUs per node, first on the workers'
// PATH) and the trainer (tests/e2e/fake_gang_trainer.sh, passed with --trainer: ablate-train's
// arguments, NCCL id file and events, without training). A sweep with gpus_per_run 16 then needs
// both 8-GPU nodes: node 0's trainer makes the NCCL id, its worker sends it, the coordinator
// relays it, node 1's worker writes it for its trainer.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "tests/util/cli_client.h"
#include "tests/util/corpus.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

// One run of the fake trainer's eight steps on 16 GPUs, so on two whole nodes.
std::string GangSpec(const std::string& name) {
  return "name: " + name +
         "\nbaseline: {preset: r9-shortcuts, scale: tiny, set: {num_iterations: 8, val_every: 4, "
         "untimed_steps: 0}}\nseeds: 1\ngpus_per_run: 16\ndataset: debian-text\nmax_attempts: 1\n";
}

// The lines of a file.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The rest of the first line that starts with `prefix`; "" when there is none.
std::string After(const std::string& text, const std::string& prefix) {
  for (const std::string& line : Lines(text)) {
    if (line.starts_with(prefix)) return line.substr(prefix.size());
  }
  return "";
}

class GangE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Enough text for `ablate-data encode` to make a valid dataset, which is all the workers
    // need to advertise debian-text (the fake trainer reads no shard).
    WriteFile(Root() + "/corpus.txt", WordCorpus(300));
    ProcessResult enc = RunProcess({ABLATE_DATA_BIN, "encode", Root() + "/corpus.txt", "--out",
                                    Root() + "/datasets/debian-text"});
    ASSERT_EQ(enc.exit_code, 0) << enc.err;
    fs::create_directories(Root() + "/bin");
    Install(ABLATE_SOURCE_DIR "/tests/e2e/fake_nvidia_smi.sh", Root() + "/bin/nvidia-smi");
    Install(ABLATE_SOURCE_DIR "/tests/e2e/fake_gang_trainer.sh", Trainer());
    StartCoordinator();
    workers_.push_back(StartWorker("node-a"));
    workers_.push_back(StartWorker("node-b"));
    // Both nodes registered with the fake nvidia-smi's eight GPUs and the dataset.
    json listed = WaitFor({"workers"}, [](const json& j) { return j["workers"].size() == 2; });
    for (const json& w : listed["workers"]) {
      ASSERT_EQ(w["gpus"].size(), 8u) << w.dump();
      EXPECT_EQ(w["gpus"][7]["index"], 7);
      EXPECT_EQ(w["gpus"][7]["model"], "NVIDIA H100 80GB HBM3");
      EXPECT_EQ(w["datasets"], json::array({"debian-text"})) << w.dump();
      EXPECT_EQ(w["trainer_version"], "ablate-train fake-gang (tests/e2e)");
    }
  }

  void TearDown() override {
    if (!HasFailure()) return;
    for (const auto& e : fs::recursive_directory_iterator(Root())) {
      std::string name = e.path().filename().string();
      if (e.path().extension() != ".err" && name != "fake-trainer.log" && name != "stderr.log") {
        continue;
      }
      std::string text = ReadFile(e.path().string());
      if (text.size() > 3000) text = text.substr(text.size() - 3000);
      std::cerr << "---- " << e.path().string() << "\n" << text << "\n";
    }
  }

  const std::string& Root() const { return root_.path(); }
  std::string Trainer() const { return Root() + "/fake-ablate-train"; }
  std::string FailFile() const { return Root() + "/fail-node"; }

  static void Install(const std::string& from, const std::string& to) {
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    fs::permissions(to, fs::perms::owner_all);
  }

  void StartCoordinator() {
    coordinator_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir",
                                 Root(), "--port-file", Root() + "/port", "--http", "off",
                                 "--lease-ms", "4000", "--heartbeat-ms", "200", "--cancel-grace-ms",
                                 "3000"},
        Root());
    for (int i = 0; i < 500 && !fs::exists(Root() + "/port"); ++i)
      std::this_thread::sleep_for(20ms);
    std::string port = ReadFile(Root() + "/port");
    address_ = "127.0.0.1:" + port.substr(0, port.find('\n'));
    cli_ = CliClient(ABLATE_CLI_BIN, address_);
  }

  // All GPUs (from the fake nvidia-smi), no CPU slot, the fake trainer.
  std::unique_ptr<Subprocess> StartWorker(const std::string& name) {
    const char* path = std::getenv("PATH");
    return std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_WORKER_BIN, "--coordinator", address_, "--work-dir",
                                 WorkDir(name), "--data-dir", Root() + "/datasets", "--cpu-slots",
                                 "0", "--name", name, "--trainer", Trainer(), "--grace-ms", "2000"},
        Root(),
        std::map<std::string, std::string>{
            {"PATH", Root() + "/bin:" + (path ? path : "/usr/bin:/bin")},
            {"FAKE_GANG_FAIL_FILE", FailFile()}});
  }

  std::string WorkDir(const std::string& worker) const { return Root() + "/work-" + worker; }

  // The run folder (worker/worker_core.cc RunDir) of an attempt on a worker.
  std::string RunDir(const std::string& worker, const std::string& run_id,
                     const std::string& attempt_id) const {
    return WorkDir(worker) + "/runs/" + run_id + "-a" + attempt_id;
  }

  Subprocess& Worker(const std::string& name) { return *workers_[name == "node-a" ? 0 : 1]; }

  static std::string Other(const std::string& worker) {
    return worker == "node-a" ? "node-b" : "node-a";
  }

  ProcessResult Cli(std::vector<std::string> args) { return cli_.Run(std::move(args)); }
  json CliJson(std::vector<std::string> args) { return cli_.Json(std::move(args)); }
  json WaitFor(std::vector<std::string> args, const std::function<bool(const json&)>& done,
               std::chrono::seconds timeout = 30s) {
    return cli_.WaitFor(std::move(args), done, timeout);
  }

  // Polls a file until `done` holds for its text; the last text either way.
  std::string WaitForFile(const std::string& path,
                          const std::function<bool(const std::string&)>& done,
                          std::chrono::seconds timeout = 15s) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string text;
    while (std::chrono::steady_clock::now() < deadline) {
      text = ReadFile(path);
      if (done(text)) return text;
      std::this_thread::sleep_for(50ms);
    }
    ADD_FAILURE() << "timed out waiting on " << path << "; last:\n" << text;
    return text;
  }

  void Submit(const std::string& spec) { cli_.Submit(Root() + "/spec.yaml", spec); }

  json WaitRun(const std::string& id, const std::string& state) {
    return WaitFor({"run", id}, [&](const json& r) { return r["state"] == state; });
  }

  // The runs each worker is executing now, as `ablate workers` lists them.
  std::map<std::string, json> RunsByWorker() {
    std::map<std::string, json> out;
    json listed = CliJson({"workers"});
    for (const json& w : listed["workers"]) out[w["id"].get<std::string>()] = w["run_ids"];
    return out;
  }

  // Checks that the attempt ran on both nodes, rank 0 on `node0`, and that node 1's trainer got
  // exactly node 0's NCCL id through the coordinator. Returns node 1's worker.
  std::string ExpectGangOf(const std::string& run_id, const std::string& attempt_id,
                           const std::string& node0) {
    const std::string node1 = Other(node0);
    const std::string dir0 = RunDir(node0, run_id, attempt_id);
    const std::string dir1 = RunDir(node1, run_id, attempt_id);
    const std::string log0 = ReadFile(dir0 + "/fake-trainer.log");
    const std::string log1 = WaitForFile(dir1 + "/fake-trainer.log", [](const std::string& t) {
      return t.find("\nid ") != std::string::npos;
    });
    const std::string visible = "visible=0,1,2,3,4,5,6,7";
    EXPECT_EQ(After(log0, "args "),
              "node_rank=0 nnodes=2 id_file=" + dir0 + "/nccl_id backend=cuda gpus=0-7 " + visible);
    EXPECT_EQ(After(log1, "args "),
              "node_rank=1 nnodes=2 id_file=" + dir1 + "/nccl_id backend=cuda gpus=0-7 " + visible);
    const std::string made = After(log0, "id ");
    EXPECT_EQ(made.size(), 256u) << log0;
    EXPECT_EQ(After(log1, "id "), made) << "node 1's trainer must get node 0's id";
    EXPECT_EQ(ReadFile(dir1 + "/nccl_id"), made + "\n") << "the file node 1's worker wrote";
    return node1;
  }

  TempDir root_;
  std::string address_;
  CliClient cli_;
  std::unique_ptr<Subprocess> coordinator_;
  std::vector<std::unique_ptr<Subprocess>> workers_;
};

TEST_F(GangE2eTest, SixteenGpuRunSpansBothNodesAndStoresNodeZerosCurveOnce) {
  Submit(GangSpec("gang-ok"));
  json run = WaitRun("1", "RUN_SUCCEEDED");
  ASSERT_EQ(run["attempts"].size(), 1u) << run.dump();
  const json& attempt = run["attempts"][0];
  EXPECT_EQ(attempt["state"], "succeeded");
  EXPECT_EQ(attempt["exit_code"], 0);
  EXPECT_EQ(attempt["error"], "");
  const std::string node0 = run["worker_id"].get<std::string>();
  ASSERT_TRUE(node0 == "node-a" || node0 == "node-b") << node0;
  EXPECT_EQ(attempt["worker_id"], node0);
  const std::string attempt_id = attempt["id"].get<std::string>();
  const std::string node1 = ExpectGangOf("1", attempt_id, node0);

  // The summary is node 0's: its steps take 10 ms, node 1's 20 ms.
  EXPECT_EQ(run["summary"]["steps"], "8");
  EXPECT_EQ(run["summary"]["train_time_ms"], 80.0);
  EXPECT_EQ(run["summary"]["mean_step_ms"], 10.0);
  EXPECT_EQ(run["summary"]["final_val_loss"], 4.1);

  // Node 1's trainer (it may end after node 0) did emit its own, different points; they stayed
  // in its run folder.
  std::string events1 =
      WaitForFile(RunDir(node1, "1", attempt_id) + "/events.jsonl", [](const std::string& t) {
        return t.find("{\"event\":\"end\",\"status\":\"ok\"") != std::string::npos;
      });
  EXPECT_NE(events1.find("\"step\":8,\"train_loss\":5.1,\"lr\":1.0,\"step_ms\":20"),
            std::string::npos)
      << events1;

  // The stored curve: steps 0..8 once each, all of node 0's.
  ProcessResult exported = Cli({"export", "1", "--format", "jsonl"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  std::vector<std::string> lines = Lines(exported.out);
  ASSERT_EQ(lines.size(), 1u) << exported.out;
  json runs = json::parse(lines[0], nullptr, false);
  ASSERT_TRUE(runs.is_object()) << lines[0];
  std::vector<int64_t> steps;
  for (const json& p : runs["points"]) {
    int64_t step = p["step"].get<int64_t>();
    steps.push_back(step);
    if (step > 0) {
      EXPECT_EQ(p["step_ms"], 10.0) << "node 0's points, not node 1's: " << p.dump();
      EXPECT_EQ(p["train_time_ms"], 10.0 * double(step)) << p.dump();
    }
    EXPECT_EQ(p["val_loss"].is_null(), step % 4 != 0) << p.dump();
  }
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(CliJson({"sweep", "1"})["state"], "SWEEP_SUCCEEDED");

  // Both shares are released: no worker lists the run any more.
  json idle = WaitFor({"workers"}, [](const json& j) {
    for (const json& w : j["workers"]) {
      if (!w["run_ids"].empty()) return false;
    }
    return true;
  });
  EXPECT_EQ(idle["workers"].size(), 2u);
  EXPECT_NE(workers_[0]->Stderr().find("attempt " + attempt_id + ": node "), std::string::npos);
}

TEST_F(GangE2eTest, NodeOneFailingEndsTheAttemptAndStopsNodeZero) {
  WriteFile(FailFile(), "1\n");
  Submit(GangSpec("gang-fails"));
  json run = WaitRun("1", "RUN_FAILED");
  ASSERT_EQ(run["attempts"].size(), 1u) << run.dump();
  const json& attempt = run["attempts"][0];
  const std::string node0 = run["worker_id"].get<std::string>();
  ASSERT_TRUE(node0 == "node-a" || node0 == "node-b") << node0;
  const std::string node1 = Other(node0);
  const std::string attempt_id = attempt["id"].get<std::string>();
  const std::string error = "node 1 of 2 (worker " + node1 +
                            "): fake trainer: node 1 lost its GPU at step 2 (exit code 1)";
  EXPECT_EQ(attempt["state"], "failed");
  EXPECT_EQ(attempt["worker_id"], node0);
  EXPECT_EQ(attempt["exit_code"], 1);
  EXPECT_EQ(attempt["error"], error);
  EXPECT_EQ(attempt["stderr_tail"], "ablate-train: fake trainer: node 1 lost its GPU at step 2\n");
  EXPECT_EQ(run["error"], error);
  EXPECT_EQ(run["attempts_used"], 1);
  ExpectGangOf("1", attempt_id, node0);

  // The coordinator cancels node 0, whose trainer would otherwise wait for node 1 forever.
  const std::string dir0 = RunDir(node0, "1", attempt_id);
  std::string log0 = WaitForFile(dir0 + "/fake-trainer.log", [](const std::string& t) {
    return t.find("sigterm\n") != std::string::npos;
  });
  EXPECT_EQ(Lines(log0).back(), "sigterm") << log0;
  std::string events0 = WaitForFile(dir0 + "/events.jsonl", [](const std::string& t) {
    return t.find("\"event\":\"end\"") != std::string::npos;
  });
  EXPECT_NE(events0.find("{\"event\":\"end\",\"status\":\"cancelled\""), std::string::npos)
      << events0;
  EXPECT_NE(coordinator_->Stderr().find("cancelling attempt " + attempt_id + " on worker " + node0 +
                                        " (" + error + ")"),
            std::string::npos)
      << coordinator_->Stderr();
  EXPECT_EQ(CliJson({"sweep", "1"})["state"], "SWEEP_FAILED");

  // Both nodes' GPUs are free again: no worker lists the run (node 0's share goes with its own
  // result, "cancelled", which must not overwrite the failure), and a new 16-GPU run is placed
  // on the same two nodes and succeeds.
  WaitFor({"workers"}, [](const json& j) {
    for (const json& w : j["workers"]) {
      if (!w["run_ids"].empty()) return false;
    }
    return j["workers"].size() == 2;
  });
  json after = CliJson({"run", "1"});
  EXPECT_EQ(after["state"], "RUN_FAILED");
  EXPECT_EQ(after["attempts"][0]["state"], "failed");
  EXPECT_EQ(after["attempts"][0]["error"], error);
  const std::string a = "attempt " + attempt_id;
  EXPECT_NE(Worker(node0).Stderr().find(a + ": cancel (" + error + ")\n"), std::string::npos)
      << Worker(node0).Stderr();
  EXPECT_NE(Worker(node0).Stderr().find("run 1 " + a + ": trainer ended: cancelled\n"),
            std::string::npos)
      << Worker(node0).Stderr();
  EXPECT_NE(Worker(node1).Stderr().find("run 1 " + a +
                                        ": trainer ended: failed (fake trainer: "
                                        "node 1 lost its GPU at step 2 (exit code 1))\n"),
            std::string::npos)
      << Worker(node1).Stderr();
  fs::remove(FailFile());
  Submit(GangSpec("gang-after"));
  json next = WaitRun("2", "RUN_SUCCEEDED");
  ASSERT_EQ(next["attempts"].size(), 1u) << next.dump();
  ExpectGangOf("2", next["attempts"][0]["id"].get<std::string>(),
               next["worker_id"].get<std::string>());
}

}  // namespace
}  // namespace ablate::testing
