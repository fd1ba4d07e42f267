// Script runs end to end (issue 14): a real coordinator, real workers and the CLI run a training
// script written for these tests (tests/e2e/scripts/train_tiny.py: PyTorch from Debian's
// python3-torch on the CPU, gloo across processes) that prints modded-nanogpt's log lines.
// Covered: a sweep of baseline + edited-script + args + env variants; torchrun with two
// processes on two (fake) GPUs and, on a CPU slot, a gang of two (processes: 2) in shuffled blocks
// with an args ablation's verdict; a two-node gang whose torch rendezvous the coordinator relays (nvidia-smi faked as in
// gang_e2e_test.cc); bad specs; a worker without --allow-scripts; SIGKILL of the worker and of
// the coordinator mid-run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/util/cli_client.h"
#include "tests/util/sqlite_query.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

// One printed modded-nanogpt line, parsed here independently of the worker's parser.
struct Printed {
  std::optional<double> train_loss, val_loss;
  double train_time_ms = 0;
};

// step -> what the script printed for it (a train line and a val line of one step together).
std::map<int64_t, Printed> PrintedCurve(const std::string& stdout_text) {
  std::map<int64_t, Printed> curve;
  std::stringstream in(stdout_text);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("[default0]:")) line = line.substr(11);
    if (!line.starts_with("step:")) continue;
    std::stringstream fields(line);
    std::string field;
    fields >> field;
    int64_t step = std::stoll(field.substr(5, field.find('/') - 5));
    Printed& p = curve[step];
    while (fields >> field) {
      std::string key = field.substr(0, field.find(':')), value = field.substr(field.find(':') + 1);
      if (key == "train_loss") p.train_loss = std::stod(value);
      if (key == "val_loss") p.val_loss = std::stod(value);
      if (key == "train_time") p.train_time_ms = std::stod(value.substr(0, value.size() - 2));
    }
  }
  return curve;
}

class ScriptE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ProcessResult r = RunProcess(
        {"/bin/bash", ABLATE_SOURCE_DIR "/tests/data/make_debian_text.sh",
         Root() + "/datasets/debian-text"},
        {{"ABLATE_DATA", ABLATE_DATA_BIN}}, 120s);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    fs::create_directories(Root() + "/spec");
    fs::copy_file(ABLATE_SOURCE_DIR "/tests/e2e/scripts/train_tiny.py", Spec("train_tiny.py"));
    // The edited script: a wider model, the rest as is.
    std::string edited = ReadFile(Spec("train_tiny.py"));
    size_t at = edited.find("width = 32 *");
    ASSERT_NE(at, std::string::npos);
    edited.replace(at, 12, "width = 48 *");
    WriteFile(Spec("train_tiny_edit.py"), edited);
    fs::create_directories(Root() + "/bin");
    fs::copy_file(ABLATE_SOURCE_DIR "/tests/e2e/fake_nvidia_smi.sh", Root() + "/bin/nvidia-smi");
    fs::permissions(Root() + "/bin/nvidia-smi", fs::perms::owner_all);
    StartCoordinator("127.0.0.1:0");
  }

  void TearDown() override {
    workers_.clear();
    if (!HasFailure()) return;
    for (const auto& e : fs::recursive_directory_iterator(Root())) {
      std::string name = e.path().filename().string();
      if (e.path().extension() != ".err" && name != "stdout.log" && name != "stderr.log") continue;
      std::string text = ReadFile(e.path().string());
      if (text.size() > 3000) text = text.substr(text.size() - 3000);
      std::cerr << "---- " << e.path().string() << "\n" << text << "\n";
    }
  }

  const std::string& Root() const { return root_.path(); }
  std::string Spec(const std::string& name) const { return Root() + "/spec/" + name; }
  std::string WorkDir(const std::string& worker) const { return Root() + "/work-" + worker; }

  void StartCoordinator(const std::string& listen) {
    fs::remove(Root() + "/port");
    coordinator_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_COORDINATOR_BIN, "--listen", listen, "--data-dir", Root(),
                                 "--port-file", Root() + "/port", "--http", "off", "--lease-ms",
                                 "4000", "--heartbeat-ms", "200", "--cancel-grace-ms", "3000"},
        Root());
    for (int i = 0; i < 500 && !fs::exists(Root() + "/port"); ++i) std::this_thread::sleep_for(20ms);
    std::string port = ReadFile(Root() + "/port");
    address_ = "127.0.0.1:" + port.substr(0, port.find('\n'));
    cli_ = CliClient(ABLATE_CLI_BIN, address_);
  }

  // A worker on this machine: CPU slots and no GPUs, or (gpus) the fake nvidia-smi's eight.
  Subprocess& StartWorker(const std::string& name, bool allow_scripts, int cpu_slots = 2,
                          bool gpus = false, const std::string& python = ABLATE_SCRIPT_PYTHON) {
    std::vector<std::string> argv = {
        ABLATE_WORKER_BIN, "--coordinator", address_, "--work-dir", WorkDir(name), "--data-dir",
        Root() + "/datasets", "--cpu-slots", std::to_string(cpu_slots), "--gpus",
        gpus ? "all" : "none", "--name", name, "--trainer", "/bin/true", "--grace-ms", "2000",
        "--python", python, "--master-addr", "127.0.0.1"};
    if (allow_scripts) argv.push_back("--allow-scripts");
    const char* path = std::getenv("PATH");
    workers_[name] = std::make_unique<Subprocess>(
        argv, Root(),
        std::map<std::string, std::string>{
            {"PATH", Root() + "/bin:" + (path ? path : "/usr/bin:/bin")}});
    return *workers_[name];
  }

  void Submit(const std::string& spec) { cli_.Submit(Spec("sweep.yaml"), spec); }

  json WaitRun(int id, const std::string& state, std::chrono::seconds timeout = 240s) {
    return cli_.WaitFor({"run", std::to_string(id)},
                        [&](const json& r) { return r["state"] == state; }, timeout);
  }

  // The stored curve of every run of a sweep, by run id (`ablate export`), each as
  // {"run": `ablate --json run ID`, "points": the exported points}.
  std::map<int64_t, json> Exported(int sweep_id) {
    ProcessResult r = cli_.Run({"export", std::to_string(sweep_id), "--format", "jsonl"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::map<int64_t, json> runs;
    std::stringstream in(r.out);
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (!j.is_object()) continue;
      int64_t id = j["run_id"].get<int64_t>();
      runs[id] = {{"run", cli_.Json({"run", std::to_string(id)})}, {"points", j["points"]}};
    }
    return runs;
  }

  // The run folder of a run's attempt on a worker (worker/worker_core.cc RunDir).
  std::string RunDir(const std::string& worker, const json& run, size_t attempt = 0) const {
    return WorkDir(worker) + "/runs/" + run["id"].get<std::string>() + "-a" +
           run["attempts"][attempt]["id"].get<std::string>();
  }

  // The stored points equal the printed lines, point for point: the same steps, and at each the
  // printed train loss, val loss and training time.
  void ExpectCurveIsPrinted(const json& points, const std::string& stdout_path) {
    std::map<int64_t, Printed> printed = PrintedCurve(ReadFile(stdout_path));
    ASSERT_FALSE(printed.empty()) << stdout_path;
    std::map<int64_t, json> stored;
    for (const json& p : points) {
      int64_t step = p["step"].get<int64_t>();
      EXPECT_FALSE(stored.count(step)) << "step " << step << " stored twice";
      stored[step] = p;
    }
    ASSERT_EQ(stored.size(), printed.size()) << points.dump();
    for (const auto& [step, want] : printed) {
      ASSERT_TRUE(stored.count(step)) << "step " << step << " missing";
      const json& got = stored[step];
      if (want.train_loss) {
        EXPECT_DOUBLE_EQ(got["train_loss"].get<double>(), *want.train_loss) << got.dump();
      } else {
        EXPECT_TRUE(got["train_loss"].is_null()) << got.dump();
      }
      if (want.val_loss) {
        EXPECT_DOUBLE_EQ(got["val_loss"].get<double>(), *want.val_loss) << got.dump();
      } else {
        EXPECT_TRUE(got["val_loss"].is_null()) << got.dump();
      }
      EXPECT_DOUBLE_EQ(got["train_time_ms"].get<double>(), want.train_time_ms) << got.dump();
    }
  }

  int Count(const std::string& sql) {
    return static_cast<int>(QueryInt(Root() + "/ablate.db", sql));
  }

  TempDir root_;
  std::string address_;
  CliClient cli_;
  std::unique_ptr<Subprocess> coordinator_;
  std::map<std::string, std::unique_ptr<Subprocess>> workers_;
};

constexpr char kSweep[] = R"(name: tiny-script
baseline:
  script: train_tiny.py
  launch: python
  args: ["--lr", "0.01", "--steps", "8"]
  env: {MY_FLAG: "1"}
  data_link: data/debian-text
  record: "20"
dataset: debian-text
target_val_loss: 4.5
seeds: 2
gpus_per_run: 0
max_attempts: 1
ablations:
  - {name: edited, script: train_tiny_edit.py}
  - {name: higher-lr, args: ["--lr", "0.02", "--steps", "8"]}
  - {name: flag-on, env: {MY_FLAG: "2"}}
)";

TEST_F(ScriptE2eTest, SweepOfScriptVariantsStoresThePrintedCurves) {
  StartWorker("w", /*allow_scripts=*/true);
  Submit(kSweep);
  json sweep = cli_.WaitFor({"sweep", "1"},
                            [](const json& s) {
                              return s["state"] == "SWEEP_SUCCEEDED" ||
                                     s["state"] == "SWEEP_FAILED";
                            },
                            400s);
  ASSERT_EQ(sweep["state"], "SWEEP_SUCCEEDED") << sweep.dump(1);
  ASSERT_EQ(sweep["variants"].size(), 4u);
  std::map<int64_t, json> exported = Exported(1);
  ASSERT_EQ(exported.size(), 8u);
  std::set<std::string> hashes;
  for (const auto& [id, e] : exported) {
    const json& run = e["run"];
    EXPECT_EQ(run["state"], "RUN_SUCCEEDED") << run.dump();
    json config = json::parse(run["config_json"].get<std::string>());
    hashes.insert(config["script"]["snapshot"].get<std::string>());
    ExpectCurveIsPrinted(e["points"], RunDir("w", run) + "/stdout.log");
    // The data_link made the dataset visible where the script reads it.
    EXPECT_TRUE(fs::is_symlink(RunDir("w", run) + "/data/debian-text"));
    EXPECT_EQ(run["summary"]["steps"], "8");
    EXPECT_TRUE(run["summary"].contains("final_val_loss")) << run.dump();
  }
  EXPECT_EQ(hashes.size(), 2u) << "baseline's script and the edited one";
  EXPECT_EQ(Count("SELECT count(*) FROM code_snapshots"), 2) << "each snapshot stored once";

  // compare works on script variants.
  json cmp = cli_.Json({"compare", "1"});
  ASSERT_TRUE(cmp.is_object());
  ASSERT_EQ(cmp["variants"].size(), 4u);
  for (const json& v : cmp["variants"]) EXPECT_EQ(v["n"], 2) << v.dump();

  // The baseline names record 20: its two runs appear beside that record, and only there.
  json records = cli_.Json({"records"});
  int script_groups = 0;
  for (const json& row : records["records"]) {
    for (const json& own : row.value("own_runs", json::array())) {
      if (!own.value("script", false)) continue;
      ++script_groups;
      EXPECT_EQ(row["record"]["id"], "20") << row.dump();
      EXPECT_EQ(own["n"], 2) << own.dump();
      EXPECT_EQ(own["hardware"], "cpu");
      EXPECT_EQ(own["scale"], "full");
      EXPECT_TRUE(own.contains("mean_final_val_loss")) << own.dump();
    }
  }
  EXPECT_EQ(script_groups, 1) << records.dump();

  // `ablate run` shows the snapshot hash and, for the edited script, the diff.
  int64_t edited_run = 0;
  for (const auto& [id, e] : exported) {
    if (e["run"]["variant_name"] == "edited") edited_run = id;
  }
  ProcessResult shown = cli_.Run({"run", std::to_string(edited_run)});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("snapshot sha256 "), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("-width = 32 * int(os.environ.get(\"MY_FLAG\", \"1\"))\n"
                           "+width = 48 * int(os.environ.get(\"MY_FLAG\", \"1\"))"),
            std::string::npos)
      << shown.out;
}

TEST_F(ScriptE2eTest, BadScriptSpecsExitThreeAndStoreNothing) {
  fs::create_directories(Spec("big"));
  WriteFile(Spec("big/huge.bin"), "");
  fs::resize_file(Spec("big/huge.bin"), (16 << 20) + 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"missing.yaml", "name: m\nbaseline: {script: nope.py}\n"},
      {"big.yaml", "name: b\nbaseline: {script: big}\n"},
      {"placeholder.yaml",
       "name: p\nbaseline: {script: train_tiny.py, launch: command, command: \"{pyton} x\"}\n"},
      {"command.yaml", "name: c\nbaseline: {script: train_tiny.py, command: \"{python} x\"}\n"},
      {"both.yaml", "name: b\nbaseline: {script: train_tiny.py, preset: r9-shortcuts}\n"}};
  for (const auto& [file, spec] : cases) {
    WriteFile(Spec(file), spec);
    for (bool dry : {true, false}) {
      std::vector<std::string> args = {"submit", Spec(file)};
      if (dry) args.push_back("--dry-run");
      ProcessResult r = cli_.Run(args);
      EXPECT_EQ(r.exit_code, 3) << file << ": " << r.out << r.err;
      EXPECT_NE(r.err.find(Spec(file) + ":2:"), std::string::npos) << file << ": " << r.err;
    }
  }
  EXPECT_EQ(cli_.Json({"sweeps"})["sweeps"].size(), 0u);
  EXPECT_EQ(Count("SELECT count(*) FROM code_snapshots"), 0);
  // A dry run of a good spec validates the files and stores nothing either.
  WriteFile(Spec("good.yaml"), kSweep);
  ProcessResult dry = cli_.Run({"submit", Spec("good.yaml"), "--dry-run"});
  EXPECT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("train_tiny.py@"), std::string::npos) << dry.out;
  EXPECT_EQ(Count("SELECT count(*) FROM code_snapshots"), 0);
  EXPECT_EQ(Count("SELECT count(*) FROM sweeps"), 0);
}

TEST_F(ScriptE2eTest, AWorkerWithoutAllowScriptsNeverGetsAScriptRun) {
  StartWorker("plain", /*allow_scripts=*/false);
  Submit("name: waits\nbaseline: {script: train_tiny.py, args: [--steps, '2'], data_link: "
         "data/debian-text}\ndataset: debian-text\ngpus_per_run: 0\n");
  json sweep = cli_.WaitFor({"sweep", "1"},
                            [](const json& s) { return s.contains("waiting_reasons"); }, 30s);
  ASSERT_TRUE(sweep.contains("waiting_reasons")) << sweep.dump();
  EXPECT_NE(sweep["waiting_reasons"].dump().find("--allow-scripts"), std::string::npos)
      << sweep.dump();
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(cli_.Json({"run", "1"})["state"], "RUN_QUEUED");
  EXPECT_FALSE(fs::exists(WorkDir("plain") + "/runs"));
  // A worker that allows scripts takes it.
  StartWorker("scripts", /*allow_scripts=*/true);
  json run = WaitRun(1, "RUN_SUCCEEDED");
  EXPECT_EQ(run["worker_id"], "scripts");
}

// Issue 24: a script whose stderr has one 2401-byte line of '█' (any progress bar). The worker
// cut it at 2000 bytes, inside a 3-byte character; the coordinator could not parse the result,
// the worker reconnected and sent it again forever, and the other run never got the slot. Now
// the worker cuts on character boundaries and both runs end, each with its tail stored.
TEST_F(ScriptE2eTest, AProgressBarOfBlockCharactersInStderrDoesNotWedgeTheWorker) {
  WriteFile(Spec("bar.py"),
            "import sys\n"
            "sys.stderr.write('\\u2588' * 800 + 'x\\n')\n"
            "sys.stderr.flush()\n"
            "for s in range(1, 5):\n"
            "    print(f'step:{s}/4 train_loss:{5 - s * 0.1:.4f} train_time:{s * 10}ms "
            "step_avg:10.00ms', flush=True)\n"
            "print('step:4/4 val_loss:4.2000 train_time:40ms step_avg:10.00ms', flush=True)\n");
  StartWorker("scripts", /*allow_scripts=*/true, /*cpu_slots=*/1);
  Submit("name: bar\nbaseline: {script: bar.py, launch: python}\ndataset: debian-text\n"
         "seeds: 2\ngpus_per_run: 0\nmax_attempts: 1\n");
  for (int id : {1, 2}) {
    json run = WaitRun(id, "RUN_SUCCEEDED", 120s);
    ASSERT_EQ(run["state"], "RUN_SUCCEEDED") << run.dump();
    ASSERT_EQ(run["attempts"].size(), 1u) << "no attempt lost and requeued: " << run.dump();
  }
  std::string block_line;
  for (int i = 0; i < 666; ++i) block_line += "\xe2\x96\x88";  // 1998 bytes: whole characters
  EXPECT_EQ(Count("SELECT count(*) FROM attempts WHERE instr(stderr_tail, '" + block_line +
                  "... (2401 bytes)') > 0"),
            2);
  EXPECT_EQ(workers_["scripts"]->Stderr().find("reconnecting"), std::string::npos)
      << "the stream never broke";
}

TEST_F(ScriptE2eTest, TorchrunWithTwoProcessesStoresRankZerosCurve) {
  StartWorker("gpu", /*allow_scripts=*/true, /*cpu_slots=*/0, /*gpus=*/true);
  Submit("name: torchrun\nbaseline: {script: train_tiny.py, launch: torchrun, args: [--steps, "
         "'6'], data_link: data/debian-text}\ndataset: debian-text\ngpus_per_run: 2\n"
         "max_attempts: 1\n");
  json run = WaitRun(1, "RUN_SUCCEEDED", 300s);
  ASSERT_EQ(run["state"], "RUN_SUCCEEDED") << run.dump();
  const std::string dir = RunDir("gpu", run);
  std::string out = ReadFile(dir + "/stdout.log");
  EXPECT_NE(out.find("[default0]:step:6/6 val_loss:"), std::string::npos) << out;
  std::string err = ReadFile(dir + "/stderr.log");
  EXPECT_NE(err.find("rank 1 of 2 done"), std::string::npos) << err;
  ExpectCurveIsPrinted(Exported(1)[1]["points"], dir + "/stdout.log");
}

// Issue 23: a torchrun gang of two processes on a CPU slot (processes: 2, gloo); the lr reaches
// the script through `args`; the runs start in blocks shuffled by the sweep's order_seed (one
// slot, so the start order is the dispatch order); different curves and the right verdict.
constexpr char kCpuGangSweep[] = R"(name: cpu-gang
baseline:
  script: train_tiny.py
  launch: torchrun
  processes: 2
  args: ["--lr", "0.03", "--steps", "6", "--val-every", "3"]
  data_link: data/debian-text
dataset: debian-text
target_val_loss: 1.0
seeds: 3
gpus_per_run: 0
max_attempts: 1
order_seed: 7
ablations:
  - {name: low-lr, args: ["--lr", "0.0001", "--steps", "6", "--val-every", "3"]}
  - {name: wide, env: {MY_FLAG: "2"}}
)";

TEST_F(ScriptE2eTest, CpuTorchrunGangWithAnArgsAblationGetsTheRightVerdictInShuffledBlocks) {
  StartWorker("cpu", /*allow_scripts=*/true, /*cpu_slots=*/1);
  Submit(kCpuGangSweep);
  json sweep = cli_.WaitFor({"sweep", "1"},
                            [](const json& s) {
                              return s["state"] == "SWEEP_SUCCEEDED" ||
                                     s["state"] == "SWEEP_FAILED";
                            },
                            500s);
  ASSERT_EQ(sweep["state"], "SWEEP_SUCCEEDED") << sweep.dump(1);
  EXPECT_EQ(sweep["order_seed"], "7");
  // One slot: the runs started in dispatch order, which is blocks of seeds, shuffled.
  std::vector<int64_t> started, ranked;
  for (int i = 1; i <= 9; ++i) {
    started.push_back(QueryInt(Root() + "/ablate.db",
                               "SELECT run_id FROM attempts ORDER BY id LIMIT 1 OFFSET " +
                                   std::to_string(i - 1)));
    ranked.push_back(QueryInt(Root() + "/ablate.db",
                              "SELECT id FROM runs ORDER BY dispatch_order LIMIT 1 OFFSET " +
                                  std::to_string(i - 1)));
  }
  EXPECT_EQ(started, ranked);
  EXPECT_EQ(Count("SELECT count(DISTINCT dispatch_order) FROM runs"), 9);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE dispatch_order / 3 != seed"), 0)
      << "block k holds seed k of every variant";
  EXPECT_GT(Count("SELECT count(*) FROM runs r JOIN variants v ON v.id = r.variant_id "
                  "WHERE r.dispatch_order % 3 != v.idx"),
            0)
      << "the blocks are shuffled, not in variant order";
  // Every run was a gang of two that joined one process group.
  std::map<int64_t, json> exported = Exported(1);
  ASSERT_EQ(exported.size(), 9u);
  std::map<std::string, std::vector<double>> final_loss;
  for (const auto& [id, e] : exported) {
    const std::string dir = RunDir("cpu", e["run"]);
    EXPECT_NE(ReadFile(dir + "/stderr.log").find("rank 1 of 2 done"), std::string::npos) << dir;
    ExpectCurveIsPrinted(e["points"], dir + "/stdout.log");
    for (const json& p : e["points"]) {
      if (p["step"] == 6 && !p["val_loss"].is_null()) {
        final_loss[e["run"]["variant_name"]].push_back(p["val_loss"].get<double>());
      }
    }
  }
  ASSERT_EQ(final_loss["baseline"].size(), 3u);
  ASSERT_EQ(final_loss["low-lr"].size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_LT(final_loss["baseline"][i], final_loss["low-lr"][i]);
  json cmp = cli_.Json({"compare", "1"});
  bool seen = false;
  for (const json& v : cmp["variants"]) {
    if (v["name"] != "low-lr") continue;
    seen = true;
    EXPECT_EQ(v["loss_vs_baseline"]["verdict"], "worse") << v.dump(1);
  }
  EXPECT_TRUE(seen) << cmp.dump(1);
}

// Issue 23: sequential seeds for a script sweep. `seeds: {min: 2, max: 6}`: the ablation reaches
// the target in half the baseline's steps at the same ms/step (tests/e2e/scripts/
// fake_speedrun.py prints made-up times at once, with 0.2% of seed noise), so the rule settles it
// as faster after the first look at 2 seeds; its seeds 2..5 and the baseline's are cancelled as not
// needed, and the sweep ends with 4 runs run, not 12.
constexpr char kSequentialSweep[] = R"(name: sequential-script
baseline: {script: fake_speedrun.py, args: ["--steps-to-target", "40"]}
target_val_loss: 3.28
seeds: {min: 2, max: 6}
gpus_per_run: 0
max_attempts: 1
ablations:
  - {name: half-the-steps, args: ["--steps-to-target", "20"]}
)";

TEST_F(ScriptE2eTest, SequentialSeedsStopADecidedScriptAblationEarly) {
  fs::copy_file(ABLATE_SOURCE_DIR "/tests/e2e/scripts/fake_speedrun.py", Spec("fake_speedrun.py"));
  StartWorker("w", /*allow_scripts=*/true, /*cpu_slots=*/2);
  Submit(kSequentialSweep);
  json sweep = cli_.WaitFor(
      {"sweep", "1"},
      [](const json& s) { return s["state"] == "SWEEP_SUCCEEDED" || s["state"] == "SWEEP_FAILED"; },
      120s);
  ASSERT_EQ(sweep["state"], "SWEEP_SUCCEEDED") << sweep.dump(1);
  // Every seed up to max was stored; only seeds 0 and 1 of each variant ran.
  EXPECT_EQ(Count("SELECT count(*) FROM runs"), 12);
  EXPECT_EQ(Count("SELECT count(*) FROM attempts"), 4);
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'succeeded' AND seed < 2"), 4)
      << cli_.Run({"runs", "--sweep", "1"}).out;
  EXPECT_EQ(Count("SELECT count(*) FROM runs WHERE state = 'cancelled' AND seed >= 2 AND error "
                  "LIKE 'not needed: the verdict was settled after 2 seeds%'"),
            8)
      << cli_.Run({"runs", "--sweep", "1"}).out;
  json skipped = cli_.Json({"run", "12"});
  EXPECT_EQ(skipped["state"], "RUN_CANCELLED") << skipped.dump();
  json cmp = cli_.Json({"compare", "1"});
  bool seen = false;
  for (const json& v : cmp["variants"]) {
    if (v["name"] != "half-the-steps") continue;
    seen = true;
    EXPECT_EQ(v["sequential"]["verdict"], "faster") << v.dump(1);
    EXPECT_EQ(v["sequential"]["seeds"], 2) << v.dump(1);
    EXPECT_EQ(v["time_vs_baseline"]["verdict"], "faster") << v.dump(1);
    EXPECT_EQ(v["n"], 2) << v.dump(1);
  }
  EXPECT_TRUE(seen) << cmp.dump(1);
}

// Issue 23: a script sweep without a dataset needs none; a run asking for more GPUs than any
// connected worker has is shown as unschedulable (submit, `ablate sweep`, `ablate runs`), and
// `ablate sweep` names the script.
TEST_F(ScriptE2eTest, ARunNeedingMoreGpusThanAnyWorkerIsShownUnschedulable) {
  StartWorker("cpu", /*allow_scripts=*/true, /*cpu_slots=*/1);
  cli_.WaitFor({"workers"},
               [](const json& j) {
                 return j["workers"].size() == 1 && j["workers"][0].value("connected", false);
               },
               30s);
  WriteFile(Spec("sweep.yaml"),
            "name: two-gpus\nbaseline: {script: train_tiny.py, launch: torchrun, args: "
            "[--steps, '2']}\ngpus_per_run: 2\n");
  ProcessResult submitted = cli_.Run({"submit", Spec("sweep.yaml")});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  EXPECT_NE(submitted.out.find("warning: unschedulable now: each run needs 2 GPUs and the "
                               "connected workers have 0"),
            std::string::npos)
      << submitted.out;
  cli_.WaitFor({"sweep", "1"}, [](const json& s) { return s.contains("waiting_reasons"); }, 30s);
  ProcessResult sweep = cli_.Run({"sweep", "1"});
  EXPECT_NE(sweep.out.find("waiting: 1 queued run: unschedulable: needs 2 GPUs; the connected "
                           "workers that can take it have CPU slots only"),
            std::string::npos)
      << sweep.out;
  EXPECT_NE(sweep.out.find("baseline: script train_tiny.py@"), std::string::npos) << sweep.out;
  EXPECT_NE(sweep.out.find("(launch torchrun, args --steps 2), dataset none"), std::string::npos)
      << sweep.out;
  ProcessResult runs = cli_.Run({"runs", "--sweep", "1"});
  EXPECT_NE(runs.out.find("waiting: 1 queued run: unschedulable: needs 2 GPUs"),
            std::string::npos)
      << runs.out;
  // The same script on a CPU slot needs no dataset and runs on this worker.
  WriteFile(Spec("sweep.yaml"),
            "name: own-data\nbaseline: {script: train_tiny.py, args: [--steps, '2', --data, "
            "../../../datasets/debian-text]}\ngpus_per_run: 0\n");
  ProcessResult own = cli_.Run({"submit", Spec("sweep.yaml")});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.out.find("warning"), std::string::npos) << own.out;
  json run = WaitRun(2, "RUN_SUCCEEDED");
  EXPECT_EQ(run["state"], "RUN_SUCCEEDED") << run.dump();
}

// Issue 23: `--python` as a bare name is looked up on $PATH (the supervisor once exec'd "python3"
// as is and every script run failed with exit 127); one that is not there stops the worker at
// start, saying what to do.
TEST_F(ScriptE2eTest, ThePythonIsFoundOnPathAndAMissingOneStopsTheWorkerSayingWhy) {
  ProcessResult bad = RunProcess({ABLATE_WORKER_BIN, "--coordinator", address_, "--work-dir",
                                  WorkDir("bad"), "--gpus", "none", "--allow-scripts", "--python",
                                  "/no/such/python3"},
                                 {}, 30s);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--python /no/such/python3: not an executable file: /no/such/python3; "
                         "script runs (--allow-scripts) need a Python interpreter"),
            std::string::npos)
      << bad.err;
  fs::create_symlink(ABLATE_SCRIPT_PYTHON, Root() + "/bin/python3");  // first on the worker's PATH
  StartWorker("w", /*allow_scripts=*/true, /*cpu_slots=*/1, /*gpus=*/false, "python3");
  Submit("name: bare\nbaseline: {script: train_tiny.py, args: [--steps, '2', --data, "
         "../../../datasets/debian-text]}\ngpus_per_run: 0\n");
  json run = WaitRun(1, "RUN_SUCCEEDED");
  EXPECT_EQ(run["state"], "RUN_SUCCEEDED") << run.dump();
  EXPECT_NE(workers_["w"]->Stderr().find("runs scripts with " + Root() + "/bin/python3"),
            std::string::npos)
      << workers_["w"]->Stderr();
}

TEST_F(ScriptE2eTest, TwoNodeGangJoinsThroughTheRelayedRendezvous) {
  StartWorker("node-a", true, 0, true);
  StartWorker("node-b", true, 0, true);
  cli_.WaitFor({"workers"}, [](const json& j) { return j["workers"].size() == 2; }, 30s);
  Submit(
      "name: gang\nbaseline:\n  script: train_tiny.py\n  launch: command\n  command: \"{python} "
      "-m torch.distributed.run --nproc_per_node 1 --nnodes {nnodes} --node_rank {node_rank} "
      "--master_addr {master_addr} --master_port {master_port} --redirects 1 --tee 1 --log_dir "
      "{run_dir}/tl {script} --steps 4 --data {data_dir}\"\ndataset: debian-text\n"
      "gpus_per_run: 16\nmax_attempts: 1\n");
  json run = WaitRun(1, "RUN_SUCCEEDED", 300s);
  ASSERT_EQ(run["state"], "RUN_SUCCEEDED") << run.dump();
  const std::string node0 = run["worker_id"].get<std::string>();
  const std::string node1 = node0 == "node-a" ? "node-b" : "node-a";
  // Both ranks joined one process group of two.
  EXPECT_NE(ReadFile(RunDir(node0, run) + "/stderr.log").find("rank 0 of 2 done"),
            std::string::npos);
  std::string err1 = ReadFile(RunDir(node1, run) + "/stderr.log");
  for (int i = 0; i < 100 && err1.find("rank 1 of 2 done") == std::string::npos; ++i) {
    std::this_thread::sleep_for(100ms);  // node 1 may end a moment after node 0
    err1 = ReadFile(RunDir(node1, run) + "/stderr.log");
  }
  EXPECT_NE(err1.find("rank 1 of 2 done"), std::string::npos) << err1;
  // Node 1 launched with node 0's relayed address and port.
  std::string log1 = workers_[node1]->Stderr();
  EXPECT_NE(log1.find("torch rendezvous 127.0.0.1:"), std::string::npos) << log1;
  ExpectCurveIsPrinted(Exported(1)[1]["points"], RunDir(node0, run) + "/stdout.log");
}

constexpr char kSlowRun[] =
    "name: slow\nbaseline: {script: train_tiny.py, args: [--steps, '16', --val-every, '4', "
    "--sleep-ms, '400'], data_link: data/debian-text}\ndataset: debian-text\ngpus_per_run: 0\n";

TEST_F(ScriptE2eTest, WorkerKilledMidRunRequeuesAndReusesTheCachedSnapshot) {
  Subprocess& w = StartWorker("w", true, 1);
  Submit(kSlowRun);
  cli_.WaitFor({"run", "1"},
               [&](const json& r) {
                 return r["state"] == "RUN_RUNNING" &&
                        Count("SELECT count(*) FROM metrics WHERE run_id = 1") >= 2;
               },
               120s);
  w.Signal(SIGKILL);
  w.Wait(10s);
  StartWorker("w", true, 1);  // the same worker, same work dir and cache, back after a crash
  json run = WaitRun(1, "RUN_SUCCEEDED", 300s);
  ASSERT_EQ(run["attempts"].size(), 2u) << run.dump();
  EXPECT_EQ(run["attempts"][0]["state"], "lost");
  EXPECT_EQ(run["attempts_used"], 0);
  EXPECT_NE(workers_["w"]->Stderr().find("from the local cache"), std::string::npos)
      << workers_["w"]->Stderr();
  ExpectCurveIsPrinted(Exported(1)[1]["points"], RunDir("w", run, 1) + "/stdout.log");
}

TEST_F(ScriptE2eTest, CoordinatorKilledMidRunLosesNoPointAndDoublesNone) {
  const std::string fixed = address_;
  StartWorker("w", true, 1);
  Submit(kSlowRun);
  cli_.WaitFor({"run", "1"},
               [&](const json& r) {
                 return r["state"] == "RUN_RUNNING" &&
                        Count("SELECT count(*) FROM metrics WHERE run_id = 1") >= 2;
               },
               120s);
  coordinator_->Signal(SIGKILL);
  coordinator_->Wait(10s);
  std::this_thread::sleep_for(1500ms);  // the script goes on; the worker keeps its points
  StartCoordinator(fixed);
  ASSERT_EQ(address_, fixed);
  json run = WaitRun(1, "RUN_SUCCEEDED", 300s);
  ASSERT_EQ(run["attempts"].size(), 1u) << "the run must not restart: " << run.dump();
  ExpectCurveIsPrinted(Exported(1)[1]["points"], RunDir("w", run) + "/stdout.log");
}

}  // namespace
}  // namespace ablate::testing
