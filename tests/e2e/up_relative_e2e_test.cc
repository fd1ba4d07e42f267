// `ablate up` with a relative --data-dir, started from a directory other than the repository's
// (issue 41): the worker runs the trainer in each run's own folder and a script in another, so
// every path the user gave must be absolute by then. The demo as the README runs it (all 18
// runs), and a script sweep whose script reads the dataset through its data_link.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/util/cli_client.h"
#include "tests/util/sqlite_query.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

class UpRelativeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cwd_ = root_.path() + "/somewhere/else";
    fs::create_directories(cwd_);
    data_ = fs::canonical(cwd_).string() + "/rel/data";
  }

  void TearDown() override {
    if (!HasFailure()) return;
    for (const char* log : {"coordinator.log", "worker.log"}) {
      std::string text = ReadFile(data_ + "/" + log);
      if (text.size() > 4000) text = text.substr(text.size() - 4000);
      std::cerr << "---- " << log << "\n" << text << "\n";
    }
  }

  // `ablate up ARGS --data-dir rel/data` in cwd_, HOME a folder of the test's own.
  std::unique_ptr<Subprocess> Up(std::vector<std::string> args) {
    std::vector<std::string> argv = {ABLATE_CLI_BIN, "up", "--data-dir", "rel/data", "--listen",
                                     "127.0.0.1:0", "--http", "127.0.0.1:0", "--gpus", "none"};
    argv.insert(argv.end(), args.begin(), args.end());
    fs::create_directories(root_.path() + "/home");
    return std::make_unique<Subprocess>(
        argv, root_.path(), std::map<std::string, std::string>{{"HOME", root_.path() + "/home"}},
        cwd_);
  }

  int64_t Count(const std::string& sql) { return QueryInt(data_ + "/ablate.db", sql); }

  TempDir root_;
  std::string cwd_, data_;  // data_: where rel/data is, absolute
};

TEST_F(UpRelativeTest, TheDemoFinishesEveryRun) {
  auto up = Up({"--demo"});
  std::optional<ProcessResult> done = up->Wait(600s);
  ASSERT_TRUE(done.has_value()) << "the demo ran over 600 s:\n" << up->Stdout();
  EXPECT_EQ(done->exit_code, 0) << done->out << done->err;
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 18);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'succeeded'"), 18) << done->out;
  EXPECT_EQ(Count("SELECT count(*) FROM attempts"), 18) << "no run needed a second try";
  EXPECT_EQ(Count("SELECT count(DISTINCT run_id) FROM metrics WHERE val_loss IS NOT NULL"), 18);
  // What it prints names the folder by its absolute path, not the one typed.
  EXPECT_NE(done->out.find("(data " + data_ + ")"), std::string::npos) << done->out;
  EXPECT_NE(done->out.find("stored in " + data_ + "/ablate.db"), std::string::npos) << done->out;
  EXPECT_EQ(done->out.find("no data"), std::string::npos) << done->out;
}

TEST_F(UpRelativeTest, AScriptSweepRunsAndReadsItsDataset) {
  auto up = Up({"--python", ABLATE_SCRIPT_PYTHON, "--cpu-slots", "2"});
  for (int i = 0; i < 600 && !fs::exists(data_ + "/server"); ++i) std::this_thread::sleep_for(100ms);
  ASSERT_TRUE(fs::exists(data_ + "/server")) << up->Stdout() << up->Stderr();
  std::string address = ReadFile(data_ + "/server");
  address = address.substr(0, address.find('\n'));
  CliClient cli(ABLATE_CLI_BIN, address);
  fs::create_directories(root_.path() + "/spec");
  fs::copy_file(ABLATE_SOURCE_DIR "/tests/e2e/scripts/train_tiny.py",
                root_.path() + "/spec/train_tiny.py");
  cli.Submit(root_.path() + "/spec/sweep.yaml", R"(name: relative-up
baseline:
  script: train_tiny.py
  args: ["--steps", "6"]
  data_link: data/debian-text
dataset: debian-text
target_val_loss: 4.5
seeds: 1
gpus_per_run: 0
max_attempts: 1
ablations:
  - {name: higher-lr, args: ["--lr", "0.02", "--steps", "6"]}
)");
  for (int id : {1, 2}) {
    json run = cli.WaitFor({"run", std::to_string(id)},
                           [](const json& r) { return r["state"] != "RUN_QUEUED" &&
                                                      r["state"] != "RUN_ASSIGNED" &&
                                                      r["state"] != "RUN_RUNNING"; },
                           300s);
    EXPECT_EQ(run["state"], "RUN_SUCCEEDED") << run.dump();
    // The script's six steps and step 0, each stored once.
    EXPECT_EQ(Count("SELECT count(DISTINCT step) FROM metrics WHERE run_id = " +
                    std::to_string(id)),
              7);
  }
  up->Signal(SIGINT);
  std::optional<ProcessResult> done = up->Wait(60s);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->exit_code, 0) << done->out << done->err;
}

}  // namespace
}  // namespace ablate::testing
