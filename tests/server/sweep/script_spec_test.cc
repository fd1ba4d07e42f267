// Script sweeps (issue 14): the spec shape of the issue, its errors with file:line:column, the
// variant diff, and the pieces under it (code snapshots, command placeholders).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/code_snapshot.h"
#include "common/script_command.h"
#include "server/sweep/sweep_spec.h"
#include "tests/util/subprocess.h"

namespace ablate {
namespace {

using J = nlohmann::json;
namespace fs = std::filesystem;

// The spec exactly as issue 14 gives it (command left out: it belongs to launch: command).
constexpr char kIssueSpec[] = R"(name: my-idea
baseline:
  script: train_gpt.py          # a file, or a folder (e.g. a package), relative to the spec file
  launch: torchrun              # torchrun | python | command (then `command:` below)
  args: ["--lr", "0.01"]
  env: {MY_FLAG: "1"}
  log_format: auto              # auto | modded-nanogpt | ablate-events
  data_link: data/fineweb10B    # optional: where the script expects the sweep's dataset
  record: "20"                  # optional: this baseline reproduces row 20 of the records table
dataset: fineweb10B
target_val_loss: 3.28
seeds: 4
gpus_per_run: 8
ablations:
  - {name: my-idea,   script: train_gpt_myidea.py}
  - {name: higher-lr, args: ["--lr", "0.02"]}
  - {name: flag-on,   env: {MY_FLAG: "2"}}
)";

constexpr char kBaseScript[] = "import os\nlr = 0.01\nprint('step:1/1 val_loss:3.0 train_time:1ms')\n";
constexpr char kIdeaScript[] = "import os\nlr = 0.01\nuse_idea = True\nprint('step:1/1 val_loss:3.0 train_time:1ms')\n";

ScriptUpload Upload(const std::string& name, const std::string& text) {
  return ScriptUpload{"", {{name, text, false}}};
}

ScriptUploads IssueUploads() {
  return {{"train_gpt.py", Upload("train_gpt.py", kBaseScript)},
          {"train_gpt_myidea.py", Upload("train_gpt_myidea.py", kIdeaScript)}};
}

TEST(ScriptSpecTest, TheIssuesSpecExpandsIntoScriptVariants) {
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(kIssueSpec, "my-idea.yaml", IssueUploads());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->variants.size(), 4u);
  EXPECT_EQ(r->runs.size(), 16u);
  EXPECT_EQ(r->sweep.dataset, "fineweb10B");
  EXPECT_EQ(r->sweep.gpus_per_run, 8);
  EXPECT_EQ(r->sweep.baseline_preset, "");
  EXPECT_DOUBLE_EQ(r->sweep.target_val_loss, 3.28);
  const std::string base_hash = SnapshotHash({{"train_gpt.py", kBaseScript, false}});
  const std::string idea_hash = SnapshotHash({{"train_gpt_myidea.py", kIdeaScript, false}});
  EXPECT_EQ(r->snapshots.size(), 2u);
  EXPECT_TRUE(r->snapshots.count(base_hash));
  EXPECT_TRUE(r->snapshots.count(idea_hash));

  J base = J::parse(r->variants[0].config_json);
  EXPECT_EQ(base["script"]["path"], "train_gpt.py");
  EXPECT_EQ(base["script"]["snapshot"], base_hash);
  EXPECT_EQ(base["script"]["launch"], "torchrun");
  EXPECT_EQ(base["script"]["args"], J::array({"--lr", "0.01"}));
  EXPECT_EQ(base["script"]["env"], J({{"MY_FLAG", "1"}}));
  EXPECT_EQ(base["script"]["data_link"], "data/fineweb10B");
  EXPECT_EQ(base["script"]["record"], "20");
  EXPECT_EQ(base["target_val_loss"], 3.28);
  EXPECT_EQ(r->variants[0].diff_json, "{}");

  // my-idea: another script, the rest inherited; its diff is the unified diff of the files.
  J idea = J::parse(r->variants[1].config_json);
  EXPECT_EQ(idea["script"]["snapshot"], idea_hash);
  EXPECT_EQ(idea["script"]["args"], base["script"]["args"]);
  EXPECT_FALSE(idea["script"].contains("record")) << "record: is the baseline's alone";
  J idea_diff = J::parse(r->variants[1].diff_json);
  ASSERT_EQ(idea_diff.size(), 1u) << idea_diff.dump();
  EXPECT_EQ(idea_diff["script"]["from"], "train_gpt.py@" + base_hash.substr(0, 12));
  EXPECT_EQ(idea_diff["script"]["to"], "train_gpt_myidea.py@" + idea_hash.substr(0, 12));
  EXPECT_EQ(idea_diff["script"]["diff"],
            "--- a/train_gpt.py\n+++ b/train_gpt_myidea.py\n@@ -1,3 +1,4 @@\n import os\n"
            " lr = 0.01\n+use_idea = True\n print('step:1/1 val_loss:3.0 train_time:1ms')\n");

  J lr_diff = J::parse(r->variants[2].diff_json);
  EXPECT_EQ(lr_diff, J::parse(R"({"args": {"from": ["--lr", "0.01"], "to": ["--lr", "0.02"]}})"));
  J flag_diff = J::parse(r->variants[3].diff_json);
  EXPECT_EQ(flag_diff, J::parse(R"({"env.MY_FLAG": {"from": "1", "to": "2"}})"));
  // Seeds share the variant's hash; variants differ.
  EXPECT_NE(r->variants[2].config_hash, r->variants[3].config_hash);
}

TEST(ScriptSpecTest, AnEditedScriptOfTheSameNameDiffsLineByLine) {
  std::string spec = "name: s\nbaseline: {script: a/train.py}\nablations:\n"
                     "  - {name: edited, script: b/train.py}\n";
  ScriptUploads uploads = {
      {"a/train.py", Upload("train.py", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")},
      {"b/train.py", Upload("train.py", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n")}};
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(spec, "s.yaml", uploads);
  ASSERT_TRUE(r.ok()) << r.status();
  J diff = J::parse(r->variants[1].diff_json);
  EXPECT_EQ(diff["script"]["diff"],
            "--- a/train.py\n+++ b/train.py\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n");
  J base = J::parse(r->variants[0].config_json);
  EXPECT_EQ(base["script"]["launch"], "python");
  EXPECT_EQ(base["script"]["log_format"], "auto");
}

TEST(ScriptSpecTest, ACommandTemplateWithEveryPlaceholder) {
  std::string spec =
      "name: c\nbaseline:\n  script: pkg\n  launch: command\n  command: \"{python} -m pkg "
      "--gpus {gpus} --nnodes {nnodes} --rank {node_rank} --addr {master_addr}:{master_port} "
      "--seed {seed} --out {run_dir} --data {data_dir} {{literal}} {script}\"\n";
  ScriptUploads uploads = {{"pkg", ScriptUpload{"", {{"pkg/__main__.py", "print(1)\n", false}}}}};
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(spec, "c.yaml", uploads);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(J::parse(r->variants[0].config_json)["script"]["launch"], "command");
}

// Each bad spec: exit 3 at the CLI (INVALID_ARGUMENT here) with file:line:column and the key.
struct BadCase {
  std::string name, spec, position;
  std::vector<std::string> phrases;
  ScriptUploads uploads = {{"t.py", Upload("t.py", "print(1)\n")}};
};

std::vector<BadCase> BadCases() {
  ScriptUploads missing = {{"t.py", ScriptUpload{"no such file or folder: /x/t.py", {}}}};
  ScriptUploads too_big = {
      {"t.py", ScriptUpload{"/x/t.py holds 16777217 bytes; a snapshot may hold at most 16777216 "
                            "(16 MB)",
                            {}}}};
  return {
      {"missing file", "name: s\nbaseline: {script: t.py}\n", "2:20", {"baseline.script",
       "no such file or folder: /x/t.py"}, missing},
      {"not uploaded", "name: s\nbaseline: {script: other.py}\n", "2:20", {"baseline.script",
       "did not come with the spec"}},
      {"folder over 16 MB", "name: s\nbaseline: {script: t.py}\n", "2:20", {"16 MB"}, too_big},
      {"unknown placeholder",
       "name: s\nbaseline:\n  script: t.py\n  launch: command\n  command: \"{python} {gpu}\"\n",
       "5:12", {"baseline.command", "unknown placeholder {gpu}"}},
      {"command without launch: command",
       "name: s\nbaseline:\n  script: t.py\n  launch: torchrun\n  command: \"{python} x\"\n", "5:12",
       {"baseline.command", "only used with launch: command"}},
      {"command without any launch",
       "name: s\nbaseline:\n  script: t.py\n  command: \"{python} x\"\n", "4:12",
       {"baseline.command", "needs launch: command"}},
      {"launch: command without command",
       "name: s\nbaseline:\n  script: t.py\n  launch: command\n", "3:3",
       {"baseline.launch", "needs a command"}},
      {"script and preset both set", "name: s\nbaseline: {preset: r9-shortcuts, script: t.py}\n",
       "2:12", {"baseline.preset", "either a preset or a script"}},
      {"set in a script ablation",
       "name: s\nbaseline: {script: t.py}\nablations:\n  - {name: x, set: {logit_softcap: 3}}\n",
       "4:20", {"ablations[0].set", "built-in trainer"}},
      {"ablation that changes nothing",
       "name: s\nbaseline: {script: t.py}\nablations:\n  - {name: x, args: []}\n", "4:5",
       {"ablations[0]", "changes nothing"}},
      {"reserved env", "name: s\nbaseline: {script: t.py, env: {ABLATE_SEED: \"3\"}}\n", "2:32",
       {"baseline.env.ABLATE_SEED", "set by the worker"}},
      {"data_link leaving the run folder", "name: s\nbaseline: {script: t.py, data_link: ../d}\n",
       "2:37", {"baseline.data_link", "relative path"}},
      {"script outside the spec folder", "name: s\nbaseline: {script: /etc/passwd}\n", "2:20",
       {"baseline.script", "relative path"}},
      {"bad log_format", "name: s\nbaseline: {script: t.py, log_format: json}\n", "2:38",
       {"baseline.log_format", "modded-nanogpt"}},
      {"bad launch", "name: s\nbaseline: {script: t.py, launch: mpirun}\n", "2:34",
       {"baseline.launch", "python | torchrun | command"}},
      {"script ablation of a preset baseline",
       "name: s\nbaseline: {preset: r9-shortcuts, scale: tiny}\nablations:\n"
       "  - {name: x, script: t.py}\n",
       "4:5", {"ablations[0]", "baseline.script"}},
      {"args not a list", "name: s\nbaseline: {script: t.py, args: --lr}\n", "2:32",
       {"baseline.args", "list"}},
      // Issue 23: args with a command template that has nowhere to put them would be dropped.
      {"args beside a command without {args}",
       "name: s\nbaseline:\n  script: t.py\n  launch: command\n  command: \"{python} {script}\"\n"
       "  args: [--lr, '0.01']\n",
       "6:9", {"baseline.args", "has no {args}"}},
      {"an ablation's args where the baseline's command has no {args}",
       "name: s\nbaseline: {script: t.py, launch: command, command: \"{python} {script}\"}\n"
       "ablations:\n  - {name: x, args: [--lr, '0.02']}\n",
       "4:21", {"ablations[0].args", "has no {args}"}},
      {"processes with launch: python", "name: s\nbaseline: {script: t.py, processes: 2}\n"
       "gpus_per_run: 0\n", "2:37", {"baseline.processes", "torchrun"}},
      {"processes on GPUs",
       "name: s\nbaseline: {script: t.py, launch: torchrun, processes: 2}\ngpus_per_run: 2\n",
       "2:55", {"baseline.processes", "one process per GPU"}},
      {"processes out of range",
       "name: s\nbaseline: {script: t.py, launch: torchrun, processes: 65}\n", "2:55",
       {"baseline.processes"}},
      {"record on an ablation",
       "name: s\nbaseline: {script: t.py}\nablations:\n  - {name: x, args: [a], record: \"20\"}\n",
       "4:26",
       {"ablations[0].record", "unknown key"}},
  };
}

TEST(ScriptSpecTest, ArgsWithAnArgsPlaceholderAndACpuGangAreAccepted) {
  ScriptUploads uploads = {{"t.py", Upload("t.py", "print(1)\n")}};
  absl::StatusOr<ExpandedSweep> command = ParseSweepSpec(
      "name: s\nbaseline: {script: t.py, launch: command, command: \"{python} {script} {args}\","
      " args: [--lr, '0.01']}\nablations:\n  - {name: x, args: [--lr, '0.02']}\n",
      "s.yaml", uploads);
  ASSERT_TRUE(command.ok()) << command.status();
  EXPECT_EQ(J::parse(command->variants[1].diff_json)["args"]["to"], J({"--lr", "0.02"}));
  absl::StatusOr<ExpandedSweep> gang = ParseSweepSpec(
      "name: s\nbaseline: {script: t.py, launch: torchrun, processes: 2}\ngpus_per_run: 0\n"
      "ablations:\n  - {name: four, processes: 4}\n",
      "s.yaml", uploads);
  ASSERT_TRUE(gang.ok()) << gang.status();
  EXPECT_EQ(J::parse(gang->variants[0].config_json)["script"]["processes"], 2);
  EXPECT_EQ(J::parse(gang->variants[1].diff_json)["processes"], J({{"from", 2}, {"to", 4}}));
}

TEST(ScriptSpecTest, BadSpecsAreRejectedWithPositionAndKey) {
  for (const BadCase& c : BadCases()) {
    absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(c.spec, "s.yaml", c.uploads);
    ASSERT_FALSE(r.ok()) << c.name << " was accepted";
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.name;
    std::string message(r.status().message());
    std::string first = message.substr(0, message.find('\n'));
    EXPECT_TRUE(first.starts_with("s.yaml:" + c.position + ": "))
        << c.name << ": expected " << c.position << ", got: " << first;
    for (const std::string& p : c.phrases) {
      EXPECT_NE(first.find(p), std::string::npos) << c.name << ": '" << p << "' not in " << first;
    }
  }
}

// --- Code snapshots --------------------------------------------------------------------------

TEST(CodeSnapshotTest, ReadsAFileOrAFolderAndHashesContentModeAndNames) {
  testing::TempDir dir;
  const std::string root = dir.path();
  testing::WriteFile(root + "/train.py", "print(1)\n");
  fs::create_directories(root + "/pkg/sub/__pycache__");
  testing::WriteFile(root + "/pkg/__main__.py", "import sub.m\n");
  testing::WriteFile(root + "/pkg/sub/m.py", "x = 1\n");
  testing::WriteFile(root + "/pkg/sub/__pycache__/m.cpython-311.pyc", "bytecode");
  absl::StatusOr<Snapshot> file = ReadSnapshot(root + "/train.py");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(*file, (Snapshot{{"train.py", "print(1)\n", false}}));
  absl::StatusOr<Snapshot> folder = ReadSnapshot(root + "/pkg/");
  ASSERT_TRUE(folder.ok()) << folder.status();
  EXPECT_EQ(*folder, (Snapshot{{"pkg/__main__.py", "import sub.m\n", false},
                               {"pkg/sub/m.py", "x = 1\n", false}}));
  const std::string h = SnapshotHash(*folder);
  EXPECT_EQ(h.size(), 64u);
  Snapshot changed = *folder;
  changed[1].content = "x = 2\n";
  EXPECT_NE(SnapshotHash(changed), h);
  changed = *folder;
  changed[1].executable = true;
  EXPECT_NE(SnapshotHash(changed), h);
  changed = *folder;
  changed[1].path = "pkg/sub/n.py";
  EXPECT_NE(SnapshotHash(changed), h);
  // The documented encoding, hashed by sha256sum: path NUL mode size NUL bytes.
  EXPECT_EQ(SnapshotHash({{"a", "b", false}}),
            "68039ebf572aa7824980052a025a7d408fe528024f9f4473fc5f00277478516a");
  // The path/content boundary is part of the encoding: moving bytes across it changes the hash.
  EXPECT_NE(SnapshotHash({{"ab", "c", false}}), SnapshotHash({{"a", "bc", false}}));
  // Round trip through a folder.
  testing::TempDir out;
  ASSERT_TRUE(WriteSnapshot(*folder, out.path()).ok());
  absl::StatusOr<Snapshot> back = ReadSnapshot(out.path() + "/pkg");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(SnapshotHash(*back), h);
}

TEST(CodeSnapshotTest, MissingAndOversizedAreErrorsThatSaySo) {
  testing::TempDir dir;
  absl::StatusOr<Snapshot> missing = ReadSnapshot(dir.path() + "/nope.py");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  fs::create_directories(dir.path() + "/big");
  testing::WriteFile(dir.path() + "/big/a.bin", "");
  fs::resize_file(dir.path() + "/big/a.bin", kMaxSnapshotBytes);  // sparse
  testing::WriteFile(dir.path() + "/big/b.py", "x");
  absl::StatusOr<Snapshot> big = ReadSnapshot(dir.path() + "/big");
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("16777217 bytes"), std::string::npos) << big.status();
  fs::remove(dir.path() + "/big/b.py");
  EXPECT_TRUE(ReadSnapshot(dir.path() + "/big").ok()) << "exactly 16 MB is allowed";
}

TEST(CodeSnapshotTest, PathsCannotLeaveTheirFolder) {
  for (const char* bad : {"", "/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a/."}) {
    EXPECT_FALSE(CheckSnapshotPath(bad).ok()) << bad;
  }
  EXPECT_TRUE(CheckSnapshotPath("pkg/sub/m.py").ok());
  testing::TempDir dir;
  EXPECT_FALSE(WriteSnapshot({{"../escape.py", "x", false}}, dir.path()).ok());
  EXPECT_FALSE(fs::exists(fs::path(dir.path()).parent_path() / "escape.py"));
}

TEST(ScriptCommandTest, PlaceholdersExpandAndUnknownOnesAreNamed) {
  absl::StatusOr<std::string> s = ExpandCommand(
      "{python} {script} --seed {seed} {{x}}", {{"python", "py3"}, {"script", "t.py"},
                                                  {"seed", "7"}});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(*s, "py3 t.py --seed 7 {x}");
  absl::StatusOr<std::vector<std::string>> bad = CommandPlaceholders("{python} {gpu}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("{gpu}"), std::string::npos);
  EXPECT_FALSE(CommandPlaceholders("{python").ok());
  EXPECT_EQ(EnvNameProblem("MY_FLAG"), "");
  EXPECT_NE(EnvNameProblem("CUDA_VISIBLE_DEVICES"), "");
  EXPECT_NE(EnvNameProblem("1X"), "");
}

}  // namespace
}  // namespace ablate
