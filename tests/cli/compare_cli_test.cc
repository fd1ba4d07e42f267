// `ablate compare`, `ablate records` and `ablate export` end to end: the test fills a coordinator's
// SQLite store through the Store API (two sweeps, finished attempts on a CPU and a GPU worker,
// summaries and curves), starts the real coordinator on that data dir and runs the real CLI.
// Table, CSV and JSON outputs are compared with tests/cli/golden/ (ABLATE_UPDATE_GOLDEN=1 rewrites
// them; review the diff by eye); exports are parsed back and compared with what was stored.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "server/store/store.h"
#include "server/sweep/sweep_spec.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// r9 at tiny scale (target 2.2 nats) on the CPU: a faster ablation, a worse one that mostly does
// not reach the target, one that never reaches it, and one with only two succeeded runs.
constexpr const char* kTinySpec = R"(name: golden-tiny
baseline: {preset: r9-shortcuts, scale: tiny}
seeds: 4
gpus_per_run: 0
max_attempts: 1
ablations:
  - {name: softcap-15, set: {logit_softcap: 15}}
  - {name: no-shortcut, set: {embed_shortcut: false}}
  - {name: no-warmup, set: {muon.momentum_warmup_steps: 0}}
  - {name: adam-beta1-0.8, set: {adam.beta1: 0.8}}
)";

// The r20 record preset unchanged at full scale on 8 GPUs: "own runs" of record 20.
constexpr const char* kGpuSpec = R"(name: golden-r20
baseline: {preset: r20-sub3min, scale: full}
seeds: 3
gpus_per_run: 8
)";

// Ablations without a baseline: nothing to compare against.
constexpr const char* kNoBaselineSpec = R"(name: golden-no-baseline
baseline: {preset: r9-shortcuts, scale: tiny}
include_baseline: false
seeds: 3
gpus_per_run: 0
ablations:
  - {name: softcap-15, set: {logit_softcap: 15}}
)";

// What one run ended with; loss < 0 = the run failed (no summary).
struct Outcome {
  double final_val_loss;
  bool reached;
  double time_to_target_ms;
  double step_ms;
};

using Outcomes = std::map<std::string, std::vector<Outcome>>;  // by variant, seed order

const Outcomes kTinyOutcomes = {
    {"baseline",
     {{2.1901, true, 12010, 40.1},
      {2.1893, true, 11870, 39.8},
      {2.1910, true, 12150, 40.4},
      {2.1897, true, 11940, 40.0}}},
    {"softcap-15",  // the same work per step as the baseline (a cap of 15 instead of 30)
     {{2.1899, true, 11020, 40.2},
      {2.1905, true, 10950, 39.9},
      {2.1889, true, 11180, 40.3},
      {2.1902, true, 11060, 40.0}}},
    {"no-shortcut",
     {{2.2031, false, 0, 40.2},
      {2.1985, true, 12890, 40.0},
      {2.2062, false, 0, 40.3},
      {2.2040, false, 0, 40.1}}},
    {"no-warmup",
     {{2.2301, false, 0, 40.0},
      {2.2255, false, 0, 39.9},
      {2.2322, false, 0, 40.2},
      {2.2287, false, 0, 40.1}}},
    {"adam-beta1-0.8",
     {{2.1895, true, 11990, 40.0}, {2.1908, true, 12080, 40.2}, {-1, false, 0, 0}}},
};

// Ablations that do the baseline's work per step, run while the machine slowed down: ms/step
// rises from ~40 to ~61 across the variants, and time to target with it, at the same steps.
constexpr const char* kDriftSpec = R"(name: golden-drift
baseline: {preset: r9-shortcuts, scale: tiny}
seeds: 3
gpus_per_run: 0
ablations:
  - {name: adam-eps-1e-10, set: {adam.eps: 1.0e-10}}
  - {name: muon-lr-0.03, set: {muon.lr: 0.03}}
)";

const Outcomes kDriftOutcomes = {
    {"baseline", {{2.1901, true, 12030, 40.1}, {2.1893, true, 11910, 39.7}, {2.1910, true, 12090, 40.3}}},
    {"adam-eps-1e-10",
     {{2.1899, true, 15330, 51.1}, {2.1905, true, 15690, 52.3}, {2.1889, true, 15480, 51.6}}},
    {"muon-lr-0.03",
     {{2.1902, true, 18240, 60.8}, {2.1897, true, 18510, 61.7}, {2.1908, true, 18060, 60.2}}},
};

// A script sweep (issue 23): ablate cannot see a script's step work, so only the ablation declared
// `same_work: true` joins the baseline in the confound check. Its steps are ~29% slower at the
// same steps to target: the machine slowed down. The undeclared ablation is slower still, and
// rightly out of the check (it may train a bigger model).
constexpr const char* kScriptSpec = R"(name: golden-script
baseline: {script: train_gpt.py, args: ["--lr", "0.01"]}
target_val_loss: 2.2
seeds: 3
gpus_per_run: 0
ablations:
  - {name: lr-0.02, args: ["--lr", "0.02"], same_work: true}
  - {name: wider, args: ["--lr", "0.01", "--width", "2"]}
)";

const Outcomes kScriptOutcomes = {
    {"baseline",
     {{2.1901, true, 12030, 40.1}, {2.1893, true, 11910, 39.7}, {2.1910, true, 12090, 40.3}}},
    {"lr-0.02",
     {{2.1899, true, 15330, 51.1}, {2.1905, true, 15690, 52.3}, {2.1889, true, 15480, 51.6}}},
    {"wider",
     {{2.1702, true, 24300, 81.0}, {2.1711, true, 24510, 81.7}, {2.1698, true, 24060, 80.2}}},
};

const ScriptUploads kScriptUploads = {
    {"train_gpt.py",
     ScriptUpload{"", {{"train_gpt.py", "print('step:1/1 val_loss:3 train_time:1ms')\n", false}}}}};

const Outcomes kGpuOutcomes = {
    {"baseline",
     {{3.2779, true, 181200, 130.1}, {3.2791, true, 179900, 129.2}, {3.2785, true, 180600, 129.7}}},
};

constexpr int kCurveSteps = 50;

// A deterministic curve for a run: every step has a train loss; validations at 25 and 50 (the
// last is the final val loss); no lr at step 1 and no training time during the untimed steps.
std::vector<MetricPoint> Curve(const Outcome& o, int seed) {
  std::vector<MetricPoint> points;
  double train_time = 0;
  for (int step = 1; step <= kCurveSteps; ++step) {
    MetricPoint p;
    p.step = step;
    p.train_loss = o.final_val_loss + 3.0 * std::exp(-step / 10.0) + 0.001 * seed;
    if (step % 25 == 0)
      p.val_loss = step == kCurveSteps ? o.final_val_loss : o.final_val_loss + 0.05;
    if (step > 1) p.lr = 0.01 * (1.0 - step / 60.0);
    p.step_ms = o.step_ms + 0.1 * (step % 3);
    if (step > 2) {
      train_time += *p.step_ms;
      p.train_time_ms = train_time;
    }
    p.tokens = int64_t{2048} * step;
    points.push_back(p);
  }
  return points;
}

RunSummary SummaryOf(const Outcome& o) {
  RunSummary s;
  s.final_val_loss = o.final_val_loss;
  s.reached_target = o.reached;
  if (o.reached) {
    s.time_to_target_ms = o.time_to_target_ms;
    s.target_step = std::llround(o.time_to_target_ms / o.step_ms);  // time = steps x ms/step
  }
  s.steps = kCurveSteps;
  s.mean_step_ms = o.step_ms;
  s.train_time_ms = o.step_ms * (kCurveSteps - 2);
  return s;
}

// Fills a store the way a coordinator and its workers would have.
class StoreFiller {
 public:
  explicit StoreFiller(Store& store) : store_(store) {}

  void AddWorker(const std::string& id, int gpus) {
    Worker w;
    w.id = id;
    w.host = id;
    for (int i = 0; i < gpus; ++i) w.gpus.push_back({i, "NVIDIA H100 80GB HBM3", 81559});
    w.cpu_slots = gpus == 0 ? 2 : 0;
    ASSERT_TRUE(store_.UpsertWorker(w).ok());
  }

  // Submits the spec and runs every run of `outcomes` on `worker`.
  void AddSweep(const char* spec, const Outcomes& outcomes, const std::string& worker,
                const ScriptUploads& uploads = {}) {
    absl::StatusOr<ExpandedSweep> expanded = ParseSweepSpec(spec, "spec.yaml", uploads);
    ASSERT_TRUE(expanded.ok()) << expanded.status();
    absl::StatusOr<int64_t> id =
        store_.CreateSweep(expanded->sweep, expanded->variants, expanded->runs);
    ASSERT_TRUE(id.ok()) << id.status();
    RunFilter filter;
    filter.sweep_id = *id;
    absl::StatusOr<std::vector<Run>> runs = store_.ListRuns(filter);
    ASSERT_TRUE(runs.ok()) << runs.status();
    for (const Run& run : *runs) {
      const auto it = outcomes.find(run.variant_name);
      if (it == outcomes.end() || run.seed >= static_cast<int>(it->second.size())) continue;
      Execute(run, it->second[run.seed], worker);
    }
  }

  // Every point written, by sweep id and run id.
  const std::map<int64_t, std::map<int64_t, std::vector<MetricPoint>>>& points() const {
    return points_;
  }

 private:
  void Execute(const Run& run, const Outcome& o, const std::string& worker) {
    absl::StatusOr<Attempt> a = store_.CreateAttempt(run.id, worker);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(store_.MarkAttemptRunning(a->id, a->fencing_token).ok());
    AttemptResult result;
    if (o.final_val_loss < 0) {
      result.state = AttemptState::kFailed;
      result.exit_code = 1;
      result.error = "loss is NaN at step 12";
    } else {
      std::vector<MetricPoint> curve = Curve(o, run.seed);
      ASSERT_TRUE(store_.AppendMetrics(run.id, a->id, a->fencing_token, 1, curve).ok());
      points_[run.sweep_id][run.id] = curve;
      result.summary = SummaryOf(o);
    }
    ASSERT_TRUE(store_.FinishAttempt(a->id, a->fencing_token, result).ok());
  }

  Store& store_;
  std::map<int64_t, std::map<int64_t, std::vector<MetricPoint>>> points_;
};

class CompareCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    {
      StoreOptions options;
      options.clock = &clock_;  // 2026-01-01, fixed
      absl::StatusOr<std::unique_ptr<Store>> store =
          Store::Open(data_.path() + "/ablate.db", options);
      ASSERT_TRUE(store.ok()) << store.status();
      StoreFiller filler(**store);
      filler.AddWorker("laptop", 0);
      filler.AddWorker("gpu-node", 8);
      filler.AddSweep(kTinySpec, kTinyOutcomes, "laptop");
      filler.AddSweep(kGpuSpec, kGpuOutcomes, "gpu-node");
      filler.AddSweep(kNoBaselineSpec, kTinyOutcomes, "laptop");
      filler.AddSweep(kDriftSpec, kDriftOutcomes, "laptop");
      filler.AddSweep(kScriptSpec, kScriptOutcomes, "laptop", kScriptUploads);
      points_ = filler.points().at(1);  // the tiny sweep's
    }                                   // closed before the coordinator opens it
    StartCoordinator();
  }

  void StartCoordinator() {
    const std::string port_file = data_.path() + "/port";
    coordinator_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir",
                                 data_.path(), "--port-file", port_file, "--http", "off"},
        logs_.path());
    for (int i = 0; i < 500 && !std::filesystem::exists(port_file); ++i) {
      std::this_thread::sleep_for(20ms);
    }
    const std::string port = ReadFile(port_file);
    ASSERT_FALSE(port.empty()) << coordinator_->Stderr();
    address_ = "127.0.0.1:" + port.substr(0, port.find('\n'));
  }

  ProcessResult Cli(std::vector<std::string> args) {
    std::vector<std::string> argv = {ABLATE_CLI_BIN, "--server", address_};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunProcess(argv);
  }

  // Runs the CLI and checks its stdout against golden file `name`.
  void ExpectGolden(std::vector<std::string> args, const std::string& name) {
    ProcessResult r = Cli(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string path = std::string(ABLATE_GOLDEN_DIR) + "/" + name;
    if (std::getenv("ABLATE_UPDATE_GOLDEN") != nullptr) {
      WriteFile(path, r.out);
      GTEST_SKIP() << "rewrote " << path;
    }
    ASSERT_TRUE(std::filesystem::exists(path))
        << path << " is missing; run with ABLATE_UPDATE_GOLDEN=1 to write it";
    EXPECT_EQ(r.out, ReadFile(path)) << "golden " << name;
  }

  const ManualClock clock_;  // its default wall reading, 2026-01-01
  TempDir data_, logs_;
  std::unique_ptr<Subprocess> coordinator_;
  std::string address_;
  std::map<int64_t, std::vector<MetricPoint>> points_;
};

TEST_F(CompareCliTest, CompareTableGolden) { ExpectGolden({"compare", "1"}, "compare.txt"); }

TEST_F(CompareCliTest, CompareTimeOnlyGolden) {
  ExpectGolden({"compare", "1", "--metric", "time"}, "compare_time.txt");
}

TEST_F(CompareCliTest, CompareCsvGolden) { ExpectGolden({"compare", "1", "--csv"}, "compare.csv"); }

TEST_F(CompareCliTest, CompareJsonGolden) {
  ExpectGolden({"compare", "1", "--json"}, "compare.json");
}

TEST_F(CompareCliTest, RecordsGolden) { ExpectGolden({"records"}, "records.txt"); }

TEST_F(CompareCliTest, RecordsCsvGolden) { ExpectGolden({"records", "--csv"}, "records.csv"); }

// The numbers behind the goldens, checked by rule rather than by eye.
TEST_F(CompareCliTest, CompareJsonCountsAndVerdicts) {
  ProcessResult r = Cli({"--json", "compare", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json resp = json::parse(r.out);
  std::map<std::string, json> by_name;
  for (const json& v : resp["variants"]) by_name[v["name"]] = v;
  ASSERT_EQ(by_name.size(), 5u);
  EXPECT_EQ(resp["variants"][0]["name"], "baseline");
  EXPECT_EQ(by_name["baseline"]["verdict"], "baseline");
  EXPECT_EQ(by_name["softcap-15"]["verdict"], "faster");
  // ... because it needs fewer steps, not because its steps are quicker.
  EXPECT_EQ(by_name["softcap-15"]["steps_vs_baseline"]["verdict"], "fewer steps");
  EXPECT_EQ(by_name["softcap-15"]["step_ms_vs_baseline"]["verdict"], "no difference");
  EXPECT_EQ(by_name["softcap-15"]["steps_to_target"]["n"], 4);
  EXPECT_EQ(by_name["no-shortcut"]["steps_to_target"]["n"], 1);  // reached runs only
  EXPECT_EQ(by_name["no-shortcut"]["mean_step_ms"]["n"], 4);     // every run has a speed
  // Same-work variants (baseline, softcap-15, no-warmup, adam-beta1-0.8) do not differ in ms/step.
  EXPECT_EQ(resp["confound"]["tested"], true);
  EXPECT_FALSE(resp["confound"].value("confounded", false));
  EXPECT_EQ(resp["confound"]["variants"].size(), 4u);
  // Each run's node and hardware, in dispatch order.
  ASSERT_EQ(by_name["baseline"]["runs"].size(), 4u);
  EXPECT_EQ(by_name["baseline"]["runs"][0]["worker_id"], "laptop");
  EXPECT_EQ(by_name["baseline"]["runs"][0]["hardware"], "cpu");
  EXPECT_EQ(by_name["no-shortcut"]["n"], 4);  // not-reached runs are counted ...
  EXPECT_EQ(by_name["no-shortcut"]["n_reached"], 1);
  EXPECT_EQ(by_name["no-shortcut"]["time_to_target_ms"]["n"], 1);  // ... but not timed
  EXPECT_EQ(by_name["no-shortcut"]["time_vs_baseline"]["verdict"], "underpowered");
  EXPECT_EQ(by_name["no-shortcut"]["verdict"], "worse");
  EXPECT_EQ(by_name["no-warmup"]["time_vs_baseline"]["verdict"], "never reached");
  EXPECT_EQ(by_name["adam-beta1-0.8"]["n"], 2);
  EXPECT_EQ(by_name["adam-beta1-0.8"]["counts"]["failed"], 1);
  EXPECT_EQ(by_name["adam-beta1-0.8"]["verdict"], "underpowered");
  // Baseline mean time over its 4 runs: (12010 + 11870 + 12150 + 11940) / 4.
  EXPECT_DOUBLE_EQ(by_name["baseline"]["time_to_target_ms"]["mean"].get<double>(), 11992.5);
  EXPECT_NE(resp["method"].get<std::string>().find("lower bound"), std::string::npos);
}

TEST_F(CompareCliTest, ConfoundedSweepGolden) {
  ExpectGolden({"compare", "4", "--metric", "time"}, "compare_confounded.txt");
}

// Variants that do identical work differ in ms/step: no time verdict, the steps verdict instead.
TEST_F(CompareCliTest, SpeedDriftReplacesTimeVerdictsWithConfounded) {
  ProcessResult r = Cli({"--json", "compare", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json resp = json::parse(r.out);
  EXPECT_EQ(resp["confound"]["confounded"], true);
  EXPECT_LT(resp["confound"]["p_value"].get<double>(), 0.01);
  EXPECT_EQ(resp["confound"]["variants"].size(), 3u);
  for (const json& v : resp["variants"]) {
    if (v["name"] == "baseline") continue;
    EXPECT_EQ(v["time_vs_baseline"]["verdict"],
              "confounded: machine speed changed during the sweep; steps-to-target is the "
              "trustworthy measure")
        << v["name"];
    EXPECT_EQ(v["verdict"], "confounded; steps: no difference") << v["name"];
    EXPECT_EQ(v["step_ms_vs_baseline"]["verdict"], "slower steps") << v["name"];
  }
  ProcessResult table = Cli({"compare", "4"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("machine speed changed during the sweep"), std::string::npos)
      << table.out;
}

// Issue 23: a script ablation declared `same_work: true` is checked against the baseline's
// ms/step, and the undeclared one is not; the drift gives every time verdict "confounded".
TEST_F(CompareCliTest, ScriptSweepWithADeclaredSameWorkAblationGolden) {
  ExpectGolden({"compare", "5", "--metric", "time"}, "compare_script_same_work.txt");
}

TEST_F(CompareCliTest, ADeclaredSameWorkScriptAblationWithSlowerStepsConfoundsTheSweep) {
  ProcessResult r = Cli({"--json", "compare", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json resp = json::parse(r.out);
  EXPECT_EQ(resp["confound"]["tested"], true) << resp["confound"].dump();
  EXPECT_EQ(resp["confound"]["confounded"], true) << resp["confound"].dump();
  EXPECT_LT(resp["confound"]["p_value"].get<double>(), 0.01);
  EXPECT_EQ(resp["confound"]["variants"], json({"baseline", "lr-0.02"}));
  for (const json& v : resp["variants"]) {
    if (v["name"] == "baseline") continue;
    EXPECT_EQ(v["time_vs_baseline"]["verdict"],
              "confounded: machine speed changed during the sweep; steps-to-target is the "
              "trustworthy measure")
        << v["name"];
  }
  // `ablate sweep` shows the declaration beside the variant's diff, and only there.
  ProcessResult sweep = Cli({"sweep", "5"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  EXPECT_NE(sweep.out.find("args [\"--lr\",\"0.01\"]→[\"--lr\",\"0.02\"] (declared: same work per "
                           "step)"),
            std::string::npos)
      << sweep.out;
  EXPECT_EQ(sweep.out.find("(declared: same work per step)"),
            sweep.out.rfind("(declared: same work per step)"))
      << sweep.out;
}

// `ablate plan`: the spread of the baseline's finished runs (both tiny sweeps share its config),
// or a given one; the seed count itself is checked against scipy in stats_scipy_live.
TEST_F(CompareCliTest, PlanUsesTheBaselinesFinishedRuns) {
  ProcessResult r = Cli({"--json", "plan", "1", "--effect", "1%"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json plan = json::parse(r.out);
  EXPECT_EQ(plan["baseline_runs"], 7);
  EXPECT_EQ(plan["variants"], 5);
  const int seeds = plan["seeds_per_variant"];
  EXPECT_GE(seeds, 2);
  EXPECT_EQ(std::stoll(plan["runs"].get<std::string>()), 5 * seeds);
  EXPECT_NEAR(plan["effect_sd"].get<double>(),
              0.01 / plan["sd_relative"].get<double>(), 1e-12);
  ProcessResult text = Cli({"plan", "1", "--effect", "1%"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(std::to_string(seeds) + " seeds per variant (baseline included) x 5 "
                          "variants"),
            std::string::npos)
      << text.out;
  // A spec file with a given spread: 1% at a spread of 1% is one standard deviation.
  WriteFile(data_.path() + "/plan.yaml", kGpuSpec);
  json given = json::parse(
      Cli({"--json", "plan", data_.path() + "/plan.yaml", "--effect", "1%", "--sd", "1%"}).out);
  EXPECT_EQ(given["seeds_per_variant"], 17);  // scipy: the first n with power >= 0.8 at d = 1
  EXPECT_EQ(given["gpus_per_run"], 8);
  EXPECT_EQ(Cli({"plan", "1", "--effect", "lots"}).exit_code, 2);
  EXPECT_EQ(Cli({"plan", "99", "--effect", "1%"}).exit_code, 4);
}

TEST_F(CompareCliTest, RecordsShowOwnRunsByScaleAndHardware) {
  ProcessResult r = Cli({"--json", "records"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json resp = json::parse(r.out);
  ASSERT_EQ(resp["records"].size(), 91u);
  std::map<std::string, json> by_id;
  for (const json& row : resp["records"]) by_id[row["record"]["id"]] = row;
  const json& r20 = by_id["20"]["own_runs"];
  ASSERT_EQ(r20.size(), 1u);
  EXPECT_EQ(r20[0]["scale"], "full");
  EXPECT_EQ(r20[0]["hardware"], "8x NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r20[0]["n"], 3);
  // Full scale, FineWeb, 3.28, 8 GPUs of one model: like for like, so a ratio.
  EXPECT_EQ(r20[0]["like_for_like"], true);
  EXPECT_NEAR(r20[0]["ratio_to_published"].get<double>(), 180566.6666666667 / 179520, 1e-12);
  const json& r9 = by_id["9"]["own_runs"];
  ASSERT_EQ(r9.size(), 1u);  // the tiny baseline only: ablations change the config
  EXPECT_EQ(r9[0]["scale"], "tiny");
  EXPECT_EQ(r9[0]["hardware"], "cpu");
  EXPECT_EQ(r9[0]["n"], 4 + 3);  // the tiny sweep's baseline and the drift sweep's
  // A tiny CPU run is not a speedrun time: no ratio, and the reasons why.
  EXPECT_FALSE(r9[0].value("like_for_like", false));
  EXPECT_FALSE(r9[0].contains("ratio_to_published"));
  EXPECT_EQ(r9[0]["not_comparable"], "tiny scale, dataset debian-text, cpu");
  EXPECT_TRUE(by_id["11"]["own_runs"].empty());
}

TEST_F(CompareCliTest, SweepWithoutBaselineGetsStatisticsButNoComparison) {
  ProcessResult r = Cli({"--json", "compare", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json resp = json::parse(r.out);
  ASSERT_EQ(resp["variants"].size(), 1u);
  const json& v = resp["variants"][0];
  EXPECT_EQ(v["name"], "softcap-15");
  EXPECT_EQ(v["verdict"], "no baseline");
  EXPECT_EQ(v["n"], 3);
  EXPECT_FALSE(v.contains("loss_vs_baseline"));
  ProcessResult table = Cli({"compare", "3"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("no baseline"), std::string::npos) << table.out;
}

void ExpectSamePoint(const MetricPoint& want, const json& got) {
  EXPECT_EQ(got["step"].get<int64_t>(), want.step);
  auto same = [&](const char* key, const std::optional<double>& v) {
    if (v) {
      EXPECT_EQ(got[key].get<double>(), *v) << key << " at step " << want.step;
    } else {
      EXPECT_TRUE(got[key].is_null()) << key << " at step " << want.step;
    }
  };
  same("train_loss", want.train_loss);
  same("val_loss", want.val_loss);
  same("lr", want.lr);
  same("step_ms", want.step_ms);
  same("train_time_ms", want.train_time_ms);
  EXPECT_EQ(got["tokens"].get<int64_t>(), *want.tokens);
}

TEST_F(CompareCliTest, ExportJsonlRoundTrips) {
  const std::string out = data_.path() + "/export.jsonl";
  ProcessResult r = Cli({"export", "1", "--format", "jsonl", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(ReadFile(out));
  int runs = 0;
  for (std::string line; std::getline(lines, line); ++runs) {
    json run = json::parse(line);
    const int64_t id = run["run_id"];
    EXPECT_EQ(run["config"]["seed"], run["seed"]);
    EXPECT_EQ(run["config"]["vocab_size"], 512);
    const auto written = points_.find(id);
    if (written == points_.end()) {  // a run that failed or never ran has no curve
      EXPECT_TRUE(run["points"].empty());
      EXPECT_TRUE(run["summary"]["final_val_loss"].is_null());
      continue;
    }
    const Outcome& o =
        kTinyOutcomes.at(run["variant"].get<std::string>()).at(run["seed"].get<int>());
    EXPECT_EQ(run["summary"]["final_val_loss"].get<double>(), o.final_val_loss);
    EXPECT_EQ(run["summary"]["reached_target"].get<bool>(), o.reached);
    EXPECT_EQ(run["attempts"].size(), 1u);
    EXPECT_EQ(run["attempts"][0]["worker_id"], "laptop");
    ASSERT_EQ(run["points"].size(), written->second.size());
    for (size_t i = 0; i < written->second.size(); ++i) {
      ExpectSamePoint(written->second[i], run["points"][i]);
    }
  }
  EXPECT_EQ(runs, 20);  // 5 variants x 4 seeds, in run id order
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> cells(1);
  for (char ch : line) {
    if (ch == ',') {
      cells.emplace_back();
    } else {
      cells.back() += ch;
    }
  }
  return cells;
}

TEST_F(CompareCliTest, ExportCsvRoundTrips) {
  ProcessResult r = Cli({"export", "1", "--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string header;
  std::getline(lines, header);
  const std::vector<std::string> columns = SplitCsv(header);
  auto col = [&](const std::string& name) {
    return std::find(columns.begin(), columns.end(), name) - columns.begin();
  };
  std::map<int64_t, std::vector<std::vector<std::string>>> rows;
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells = SplitCsv(line);
    ASSERT_EQ(cells.size(), columns.size()) << line;
    rows[std::stoll(cells[col("run_id")])].push_back(cells);
  }
  EXPECT_EQ(rows.size(), 20u);
  for (const auto& [id, points] : points_) {
    const std::vector<std::vector<std::string>>& got = rows[id];
    ASSERT_EQ(got.size(), points.size()) << "run " << id;
    for (size_t i = 0; i < points.size(); ++i) {
      const MetricPoint& p = points[i];
      EXPECT_EQ(std::stoll(got[i][col("step")]), p.step);
      EXPECT_EQ(std::stod(got[i][col("train_loss")]), *p.train_loss);
      EXPECT_EQ(got[i][col("val_loss")].empty(), !p.val_loss);
      if (p.val_loss) {
        EXPECT_EQ(std::stod(got[i][col("val_loss")]), *p.val_loss);
      }
      EXPECT_EQ(got[i][col("lr")].empty(), !p.lr);
      if (p.train_time_ms) {
        EXPECT_EQ(std::stod(got[i][col("train_time_ms")]), *p.train_time_ms);
      }
      EXPECT_EQ(std::stoll(got[i][col("tokens")]), *p.tokens);
    }
  }
}

TEST_F(CompareCliTest, ErrorsNameTheProblem) {
  ProcessResult missing = Cli({"compare", "99"});
  EXPECT_EQ(missing.exit_code, 4) << missing.err;
  EXPECT_NE(missing.err.find("99"), std::string::npos) << missing.err;
  ProcessResult metric = Cli({"compare", "1", "--metric", "speed"});
  EXPECT_EQ(metric.exit_code, 2);
  EXPECT_NE(metric.err.find("speed"), std::string::npos) << metric.err;
  ProcessResult format = Cli({"export", "1", "--format", "parquet"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_NE(format.err.find("parquet"), std::string::npos) << format.err;
  const std::string out = data_.path() + "/none.csv";
  ProcessResult unknown = Cli({"export", "99", "--format", "csv", "--out", out});
  EXPECT_EQ(unknown.exit_code, 4);
  EXPECT_FALSE(std::filesystem::exists(out));  // no half-written file
}

}  // namespace
}  // namespace ablate::testing
