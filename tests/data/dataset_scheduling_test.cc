// Datasets decide where runs go, over real processes: a coordinator, two workers (one with a
// valid debian-text dataset and a broken fineweb10B, one with no dataset), the real trainer and
// the `ablate` CLI. A worker advertises only the valid dataset and logs why the other is left
// out; runs go only to the worker that has their dataset; a sweep whose dataset no worker has
// stays queued and `ablate sweep` says why.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/util/cli_client.h"
#include "tests/util/corpus.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

class DatasetSchedulingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Enough text for a validation split above the tiny scale's needs.
    WriteFile(Root() + "/corpus.txt", WordCorpus(600));
    ProcessResult enc = RunProcess(
        {ABLATE_DATA_BIN, "encode", Root() + "/corpus.txt", "--out", Root() + "/with/debian-text"});
    ASSERT_EQ(enc.exit_code, 0) << enc.err;
    // A fineweb10B that lost its train shard: listed in its manifest, gone from the disk.
    fs::copy(Root() + "/with/debian-text", Root() + "/with/fineweb10B");
    fs::remove(Root() + "/with/fineweb10B/train_000000.bin");
    fs::create_directories(Root() + "/without");
    StartCoordinator();
    with_ = StartWorker("with-data", Root() + "/with");
    without_ = StartWorker("no-data", Root() + "/without");
  }

  void TearDown() override {
    if (!HasFailure()) return;
    for (const auto& e : fs::directory_iterator(Root())) {
      if (e.path().extension() != ".err") continue;
      std::string text = ReadFile(e.path().string());
      if (text.size() > 3000) text = text.substr(text.size() - 3000);
      std::cerr << "---- " << e.path().filename().string() << "\n" << text << "\n";
    }
  }

  const std::string& Root() const { return root_.path(); }

  void StartCoordinator() {
    coordinator_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir",
                                 Root(), "--port-file", Root() + "/port", "--http", "off"},
        Root());
    for (int i = 0; i < 500 && !fs::exists(Root() + "/port"); ++i)
      std::this_thread::sleep_for(20ms);
    std::string port = ReadFile(Root() + "/port");
    address_ = "127.0.0.1:" + port.substr(0, port.find('\n'));
    cli_ = CliClient(ABLATE_CLI_BIN, address_);
  }

  std::unique_ptr<Subprocess> StartWorker(const std::string& name, const std::string& data_dir) {
    return std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_WORKER_BIN, "--coordinator", address_, "--work-dir",
                                 Root() + "/work-" + name, "--data-dir", data_dir, "--cpu-slots",
                                 "2", "--gpus", "none", "--name", name, "--trainer",
                                 ABLATE_TRAIN_BIN, "--dataset-rescan-ms", "200"},
        Root());
  }

  ProcessResult Cli(std::vector<std::string> args) { return cli_.Run(std::move(args)); }
  json CliJson(std::vector<std::string> args) { return cli_.Json(std::move(args)); }
  json WaitFor(std::vector<std::string> args, const std::function<bool(const json&)>& done,
               std::chrono::seconds timeout = 60s) {
    return cli_.WaitFor(std::move(args), done, timeout);
  }
  void Submit(const std::string& spec) { cli_.Submit(Root() + "/spec.yaml", spec); }

  TempDir root_;
  std::string address_;
  CliClient cli_;
  std::unique_ptr<Subprocess> coordinator_, with_, without_;
};

TEST_F(DatasetSchedulingTest, RunsGoOnlyToWorkersWithTheirDatasetAndOthersWaitVisibly) {
  json workers = WaitFor({"workers"}, [](const json& j) { return j["workers"].size() == 2; });
  for (const json& w : workers["workers"]) {
    json want = w["id"] == "with-data" ? json::array({"debian-text"}) : json::array();
    EXPECT_EQ(w["datasets"], want) << w.dump();
  }
  EXPECT_NE(with_->Stderr().find("dataset fineweb10B in " + Root() +
                                 "/with is not advertised: train_000000.bin: missing"),
            std::string::npos)
      << with_->Stderr();

  Submit(R"(name: needs-fineweb
baseline: {preset: r9-shortcuts, scale: tiny}
dataset: fineweb10B
seeds: 2
gpus_per_run: 0
)");
  const std::string reason = "2 queued runs: no connected worker has dataset 'fineweb10B'";
  json waiting = WaitFor({"sweep", "1"}, [](const json& j) {
    return j.contains("waiting_reasons") && !j["waiting_reasons"].empty();
  });
  EXPECT_EQ(waiting["waiting_reasons"], json::array({reason}));
  ProcessResult shown = Cli({"sweep", "1"});
  EXPECT_NE(shown.out.find("  waiting: " + reason + "\n"), std::string::npos) << shown.out;

  // Four runs and four free CPU slots, two on each worker: only with-data may take them.
  Submit(R"(name: on-debian-text
baseline: {preset: r9-shortcuts, scale: tiny, set: {num_iterations: 4, val_every: 4}}
dataset: debian-text
seeds: 4
gpus_per_run: 0
)");
  json runs = WaitFor({"runs", "--sweep", "2"}, [](const json& j) {
    for (const json& r : j["runs"]) {
      if (r.value("worker_id", "").empty()) return false;
    }
    return j["runs"].size() == 4;
  });
  for (const json& r : runs["runs"]) EXPECT_EQ(r["worker_id"], "with-data") << r.dump();
  json done = WaitFor(
      {"sweep", "2"}, [](const json& j) { return j["counts"].value("succeeded", 0) == 4; }, 120s);
  EXPECT_EQ(done["waiting_reasons"], json::array()) << done.dump();
  EXPECT_EQ(CliJson({"sweep", "1"})["counts"]["queued"], 2);
}

// A dataset that becomes valid while the worker is connected (here: its missing shard comes
// back, as when a fetch finishes) is advertised on a heartbeat, and the waiting sweep runs on it
// with no worker restart.
TEST_F(DatasetSchedulingTest, ADatasetThatAppearsMidConnectionIsScheduledOn) {
  WaitFor({"workers"}, [](const json& j) { return j["workers"].size() == 2; });
  Submit(R"(name: needs-fineweb
baseline: {preset: r9-shortcuts, scale: tiny, set: {num_iterations: 4, val_every: 4}}
dataset: fineweb10B
seeds: 2
gpus_per_run: 0
)");
  WaitFor({"sweep", "1"}, [](const json& j) {
    return j.contains("waiting_reasons") && !j["waiting_reasons"].empty();
  });
  fs::copy_file(Root() + "/with/debian-text/train_000000.bin",
                Root() + "/with/fineweb10B/train_000000.bin");
  json workers = WaitFor({"workers"}, [](const json& j) {
    for (const json& w : j["workers"]) {
      if (w["id"] == "with-data") return w["datasets"].size() == 2;
    }
    return false;
  });
  json done = WaitFor(
      {"sweep", "1"}, [](const json& j) { return j["counts"].value("succeeded", 0) == 2; }, 120s);
  EXPECT_EQ(done["waiting_reasons"], json::array()) << done.dump();
  json runs = CliJson({"runs", "--sweep", "1"});
  for (const json& r : runs["runs"]) EXPECT_EQ(r["worker_id"], "with-data") << r.dump();
  EXPECT_NE(with_->Stderr().find("datasets changed; now advertising: debian-text, fineweb10B"),
            std::string::npos)
      << with_->Stderr();
}

}  // namespace
}  // namespace ablate::testing
