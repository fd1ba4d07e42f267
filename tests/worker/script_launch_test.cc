// Script runs on the worker (worker/script_launch.h): the command lines and environment of each
// launch kind, the run folder (snapshot and data_link), and the snapshot cache.
#include "worker/script_launch.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/util/subprocess.h"

namespace ablate::worker {
namespace {

namespace fs = std::filesystem;

const std::string kHash(64, 'a');

std::string Config(const std::string& launch, const std::string& command = "") {
  return R"({"script":{"args":["--lr","0.02"],"command":")" + command +
         R"(","data_link":"data/fineweb10B","env":{"MY_FLAG":"2"},"launch":")" + launch +
         R"(","log_format":"modded-nanogpt","path":"train_gpt.py","snapshot":")" + kHash +
         R"("},"seed":3,"target_val_loss":3.28})";
}

LaunchContext Context(int nnodes = 1, int rank = 0) {
  LaunchContext x;
  x.python = "/usr/bin/python3";
  x.run_dir = "/w/runs/7-a9";
  x.data_dir = "/d/fineweb10B";
  x.run_id = 7;
  x.gpus = 8;
  x.nnodes = nnodes;
  x.node_rank = rank;
  x.master_addr = "10.0.0.1";
  x.master_port = 29501;
  return x;
}

TEST(ScriptLaunchTest, ConfigIsRead) {
  absl::StatusOr<ScriptConfig> c = ParseScriptConfig(Config("python"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->path, "train_gpt.py");
  EXPECT_EQ(c->seed, 3);
  EXPECT_EQ(c->log_format, LogFormat::kModdedNanogpt);
  EXPECT_EQ(*c->target_val_loss, 3.28);
  EXPECT_TRUE(IsScriptConfig(Config("python")));
  EXPECT_FALSE(IsScriptConfig(R"({"n_layer":12})"));
  EXPECT_FALSE(ParseScriptConfig(R"({"script":{"path":"../x.py"}})").ok());
}

TEST(ScriptLaunchTest, EachLaunchKindsCommandLine) {
  auto argv = [](const std::string& config, LaunchContext x) {
    return *ScriptArgv(*ParseScriptConfig(config), x);
  };
  EXPECT_EQ(argv(Config("python"), Context()),
            (std::vector<std::string>{"/usr/bin/python3", "train_gpt.py", "--lr", "0.02"}));
  LaunchContext one_node = Context();
  one_node.master_addr = "127.0.0.1";
  one_node.master_port = 40123;
  EXPECT_EQ(argv(Config("torchrun"), one_node),
            (std::vector<std::string>{"/usr/bin/python3", "-m", "torch.distributed.run",
                                      "--nproc_per_node", "8", "--nnodes", "1", "--node_rank", "0",
                                      "--master_addr", "127.0.0.1", "--master_port", "40123",
                                      "--redirects", "1", "--tee", "1", "--log_dir",
                                      "/w/runs/7-a9/torchrun-logs", "train_gpt.py", "--lr",
                                      "0.02"}));
  EXPECT_EQ(argv(Config("torchrun"), Context(2, 1)),
            (std::vector<std::string>{
                "/usr/bin/python3", "-m", "torch.distributed.run", "--nproc_per_node", "8",
                "--nnodes", "2", "--node_rank", "1", "--master_addr", "10.0.0.1",
                "--master_port", "29501", "--redirects", "1", "--tee", "1", "--log_dir",
                "/w/runs/7-a9/torchrun-logs", "train_gpt.py", "--lr", "0.02"}));
  EXPECT_EQ(argv(Config("command", "{python} {script} {gpus} {nnodes} {node_rank} "
                                   "{master_addr}:{master_port} {seed} {run_dir} {data_dir}"),
                 Context(2, 1)),
            (std::vector<std::string>{"/bin/sh", "-c",
                                      "/usr/bin/python3 train_gpt.py 8 2 1 10.0.0.1:29501 3 "
                                      "/w/runs/7-a9 /d/fineweb10B"}));
}

// Issue 23: args reach a command through {args}, each shell-quoted, and really arrive as
// written (run by /bin/sh here).
TEST(ScriptLaunchTest, ArgsReachACommandThroughTheArgsPlaceholder) {
  std::string config = R"({"script":{"args":["--lr","0.01","it's a $HOME"],"command":)"
                       R"("printf '%s|' {args}","launch":"command","log_format":"auto",)"
                       R"("path":"t.py","snapshot":")" + kHash + R"("},"seed":0})";
  absl::StatusOr<std::vector<std::string>> argv =
      ScriptArgv(*ParseScriptConfig(config), Context());
  ASSERT_TRUE(argv.ok()) << argv.status();
  EXPECT_EQ(argv->back(), "printf '%s|' '--lr' '0.01' 'it'\\''s a $HOME'");
  testing::ProcessResult r = testing::RunProcess(*argv, {}, std::chrono::seconds(10));
  EXPECT_EQ(r.out, "--lr|0.01|it's a $HOME|");
}

// On a CPU slot (no GPUs) torchrun starts `processes` ranks; on GPUs one per GPU.
TEST(ScriptLaunchTest, TorchrunOnACpuSlotStartsTheGangOfProcesses) {
  std::string config = Config("torchrun");
  config.insert(config.find(R"("snapshot")"), R"("processes":3,)");
  LaunchContext cpu = Context();
  cpu.gpus = 0;
  std::vector<std::string> argv = *ScriptArgv(*ParseScriptConfig(config), cpu);
  EXPECT_EQ(argv[4], "3") << "--nproc_per_node";
  EXPECT_EQ(ScriptArgv(*ParseScriptConfig(Config("torchrun")), cpu)->at(4), "1");
  EXPECT_EQ(ScriptArgv(*ParseScriptConfig(config), Context())->at(4), "8");
  EXPECT_FALSE(ParseScriptConfig(std::string(config).replace(config.find("3,"), 1, "99")).ok());
}

TEST(ScriptLaunchTest, Environment) {
  std::vector<std::string> env = ScriptEnv(*ParseScriptConfig(Config("python")), Context());
  for (const char* want : {"MY_FLAG=2", "ABLATE_SEED=3", "ABLATE_RUN_ID=7",
                           "ABLATE_RUN_DIR=/w/runs/7-a9", "ABLATE_DATA_DIR=/d/fineweb10B"}) {
    EXPECT_NE(std::find(env.begin(), env.end(), want), env.end()) << want;
  }
}

TEST(ScriptLaunchTest, RunFolderHoldsTheSnapshotAndTheDataLink) {
  testing::TempDir dir;
  fs::create_directories(dir.path() + "/data/fineweb10B");
  LaunchContext x = Context();
  x.run_dir = dir.path() + "/run";
  x.data_dir = dir.path() + "/data/fineweb10B";
  Snapshot files = {{"train_gpt.py", "print(1)\n", true}};
  ASSERT_TRUE(PrepareRunDir(files, *ParseScriptConfig(Config("python")), x).ok());
  EXPECT_EQ(testing::ReadFile(x.run_dir + "/train_gpt.py"), "print(1)\n");
  EXPECT_TRUE(fs::is_symlink(x.run_dir + "/data/fineweb10B"));
  EXPECT_EQ(fs::read_symlink(x.run_dir + "/data/fineweb10B"), x.data_dir);
}

TEST(SnapshotCacheTest, FetchesOnceChecksTheHashAndSurvivesARestart) {
  testing::TempDir dir;
  Snapshot files = {{"t.py", "x = 1\n", false}};
  const std::string hash = SnapshotHash(files);
  int fetches = 0;
  auto fetch = [&](const std::string&) -> absl::StatusOr<Snapshot> {
    ++fetches;
    return files;
  };
  bool fetched = false;
  {
    SnapshotCache cache(dir.path(), fetch);
    ASSERT_TRUE(cache.Get(hash, &fetched).ok());
    EXPECT_TRUE(fetched);
    ASSERT_TRUE(cache.Get(hash, &fetched).ok());
    EXPECT_FALSE(fetched);
  }
  SnapshotCache restarted(dir.path(), fetch);
  absl::StatusOr<Snapshot> again = restarted.Get(hash, &fetched);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(fetched);
  EXPECT_EQ(*again, files);
  EXPECT_EQ(fetches, 1);
  // Bytes that do not hash to what was asked for are refused, and not cached.
  SnapshotCache lying(dir.path() + "/2", [](const std::string&) -> absl::StatusOr<Snapshot> {
    return Snapshot{{"t.py", "x = 2\n", false}};
  });
  EXPECT_EQ(lying.Get(hash).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(fs::exists(dir.path() + "/2/" + hash + ".pb"));
}

}  // namespace
}  // namespace ablate::worker
