// Decomposing a record end to end (issue 29): a real coordinator, a real worker and the CLI run
// `ablate decompose` on examples/decompose/{from,to}.py, a stand-in record whose five
// changes have known effects: (a) ms/step 100 -> 80, (b) steps 200 -> 150 (two hunks joined by a
// '# ablate-change: fewer-steps' marker), (c) a label nobody reads, (d) a warmup and (e) a
// schedule that cut 40 steps only together (d named by --group). Each run's noise is drawn from
// its seed and its script's bytes, so the sweep is the same on every machine; the test checks
// that every effect and the interaction lie within the CIs compare reports, and that those CIs
// are narrow enough to tell the effects apart.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "tests/util/cli_client.h"
#include "tests/util/subprocess.h"

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr char kBaseSpec[] = R"(name: decompose-e2e
target_val_loss: 3.28
seeds: 4
gpus_per_run: 0
max_attempts: 1
)";

// The true mean of each variant: steps to target x ms/step by the changes it carries.
struct Truth {
  double steps, ms;
  double time() const { return steps * ms; }
};
Truth TruthOf(bool a, bool b, bool d, bool e) {
  return {(b ? 150.0 : 200.0) - (d && e ? 40.0 : 0.0), a ? 80.0 : 100.0};
}

class DecomposeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(Root() + "/spec");
    for (const char* f : {"from.py", "to.py"}) {
      fs::copy_file(std::string(ABLATE_SOURCE_DIR "/examples/decompose/") + f, Root() + "/" + f);
    }
    WriteFile(Root() + "/base.yaml", kBaseSpec);
    coordinator_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir",
                                 Root(), "--port-file", Root() + "/port", "--http", "off"},
        Root());
    for (int i = 0; i < 500 && !fs::exists(Root() + "/port"); ++i) std::this_thread::sleep_for(20ms);
    std::string port = ReadFile(Root() + "/port");
    address_ = "127.0.0.1:" + port.substr(0, port.find('\n'));
    cli_ = CliClient(ABLATE_CLI_BIN, address_);
    worker_ = std::make_unique<Subprocess>(
        std::vector<std::string>{ABLATE_WORKER_BIN, "--coordinator", address_, "--work-dir",
                                 Root() + "/work", "--data-dir", Root() + "/datasets",
                                 "--cpu-slots", "2", "--gpus", "none", "--name", "w", "--trainer",
                                 "/bin/true", "--python", ABLATE_SCRIPT_PYTHON, "--allow-scripts"},
        Root());
  }

  ProcessResult Decompose(std::vector<std::string> extra) {
    std::vector<std::string> args = {ABLATE_CLI_BIN, "--server", address_, "decompose",
                                     Root() + "/from.py", Root() + "/to.py",
                                     "--spec", Root() + "/base.yaml", "--python",
                                     ABLATE_SCRIPT_PYTHON};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunProcess(args);
  }

  const std::string& Root() const { return root_.path(); }

  TempDir root_;
  std::string address_;
  CliClient cli_;
  std::unique_ptr<Subprocess> coordinator_, worker_;
};

// Checks one effect against its true value: inside the reported 95% CI, which is at most
// `max_half` wide on each side (so that a CI cannot pass by being huge).
void ExpectCovers(const json& delta, double truth, double max_half, const std::string& what) {
  ASSERT_TRUE(delta.contains("ci_low") && delta.contains("ci_high")) << what << delta.dump();
  const double low = delta["ci_low"], high = delta["ci_high"];
  EXPECT_LE(low, truth) << what << ": " << delta.dump();
  EXPECT_GE(high, truth) << what << ": " << delta.dump();
  EXPECT_LT((high - low) / 2, max_half) << what << ": " << delta.dump();
}

TEST_F(DecomposeE2eTest, RecoversEachChangesEffectAndTheInteraction) {
  ProcessResult dry = Decompose({"--dry-run", "--group", "warmup=49"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_NE(dry.out.find("FROM -> TO: 5 changes"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("12 variants x 4 seeds = 48 runs"), std::string::npos) << dry.out;
  ProcessResult none = cli_.Run({"sweeps"});
  EXPECT_NE(none.out.find("no sweeps yet"), std::string::npos) << none.out;  // dry: nothing stored

  ProcessResult submitted = Decompose({"--group", "warmup=49"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.err;
  json sweep = cli_.WaitFor(
      {"sweep", "1"},
      [](const json& s) { return s["state"] == "SWEEP_SUCCEEDED" || s["state"] == "SWEEP_FAILED"; },
      300s);
  ASSERT_EQ(sweep["state"], "SWEEP_SUCCEEDED") << cli_.Run({"runs", "--sweep", "1"}).out;
  const json d = cli_.Json({"compare", "1"})["decomposition"];
  ASSERT_TRUE(d.is_object()) << cli_.Run({"compare", "1"}).out;
  EXPECT_EQ(d["to_variant"], "to");

  // Which flags (a, b, d, e) each change sets; the label (c) changes nothing.
  const std::map<std::string, std::array<bool, 4>> flags = {
      {"L13", {true, false, false, false}},   {"fewer-steps", {false, true, false, false}},
      {"L31", {false, false, false, false}},  {"warmup", {false, false, true, false}},
      {"L58", {false, false, false, true}}};
  const Truth from = TruthOf(false, false, false, false), to = TruthOf(true, true, true, true);
  ASSERT_EQ(d["changes"].size(), 5u) << d.dump(1);
  for (const json& c : d["changes"]) {
    const std::string name = c["name"];
    ASSERT_TRUE(flags.count(name)) << name;
    const auto [a, b, dd, e] = flags.at(name);
    const Truth alone = TruthOf(a, b, dd, e);
    const Truth to_minus = TruthOf(!a, !b, !dd, !e);  // TO without this change
    ExpectCovers(c["steps_to_target"]["add_one_in"], alone.steps - from.steps, 12, name + " steps");
    ExpectCovers(c["mean_step_ms"]["add_one_in"], alone.ms - from.ms, 2.5, name + " ms/step");
    ExpectCovers(c["time_to_target_ms"]["add_one_in"], alone.time() - from.time(), 1500,
                 name + " time");
    ExpectCovers(c["steps_to_target"]["leave_one_out"], to.steps - to_minus.steps, 12,
                 name + " left out, steps");
    ExpectCovers(c["time_to_target_ms"]["leave_one_out"], to.time() - to_minus.time(), 1500,
                 name + " left out, time");
  }
  // The parts: steps add up but for the warmup x schedule interaction (-40 steps); ms/step add up.
  ExpectCovers({{"ci_low", d["steps_to_target"]["ci_low"]},
                {"ci_high", d["steps_to_target"]["ci_high"]}},
               -40.0, 25, "steps interaction");
  ExpectCovers({{"ci_low", d["mean_step_ms"]["ci_low"]}, {"ci_high", d["mean_step_ms"]["ci_high"]}},
               0.0, 8, "ms/step interaction");
  // Time: (TO - FROM) - sum of the singles = (110 x 80 - 200 x 100) - (-4000 - 5000) = -2200.
  const double sum = (TruthOf(true, false, false, false).time() - from.time()) +
                     (TruthOf(false, true, false, false).time() - from.time());
  ExpectCovers({{"ci_low", d["time_to_target_ms"]["ci_low"]},
                {"ci_high", d["time_to_target_ms"]["ci_high"]}},
               (to.time() - from.time()) - sum, 2500, "time interaction");
  EXPECT_LT(d["steps_to_target"]["test"]["p_value"].get<double>(), 0.05) << d.dump(1);

  ProcessResult table = cli_.Run({"compare", "1"});
  EXPECT_NE(table.out.find("decomposition (FROM = baseline, TO = to)"), std::string::npos)
      << table.out;
}

TEST_F(DecomposeE2eTest, AChangeThatCannotStandAloneIsReportedAndNothingIsSubmitted) {
  // TO opens a string in one hunk and closes it in another: TO compiles, neither hunk alone does.
  std::string to = ReadFile(Root() + "/to.py");
  const size_t a = to.find("ms = 80.0"), b = to.find("label = \"to\"");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  to.replace(b, 12, "\"\"\"; label = \"to\"");
  to.replace(a, 9, "ms = 80.0; note = \"\"\"");
  WriteFile(Root() + "/to.py", to);
  ProcessResult r = Decompose({});
  EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("change L13 (TO lines 13) cannot stand alone"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("merge it with L31, e.g. --group L13=13,31"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("nothing was submitted"), std::string::npos) << r.err;
  EXPECT_NE(cli_.Run({"sweeps"}).out.find("no sweeps yet"), std::string::npos);
  ProcessResult merged = Decompose({"--dry-run", "--group", "L13=13,31"});
  EXPECT_EQ(merged.exit_code, 0) << merged.err;
}

// The spec is checked by the coordinator's one parser (a dry run, nothing stored), before any
// variant is compiled, with --dry-run or without.
TEST_F(DecomposeE2eTest, ABaseSpecTheCoordinatorRejectsIsReportedAndNothingIsStored) {
  WriteFile(Root() + "/base.yaml", std::string(kBaseSpec) + "seedz: 3\n");
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--dry-run"}, std::vector<std::string>{}}) {
    ProcessResult r = Decompose(extra);
    EXPECT_EQ(r.exit_code, 3) << r.out << r.err;
    EXPECT_NE(r.err.find("decompose rejected:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("base.yaml:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("seedz"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("FROM -> TO"), std::string::npos) << r.out;
  }
  EXPECT_NE(cli_.Run({"sweeps"}).out.find("no sweeps yet"), std::string::npos);
}

}  // namespace
}  // namespace ablate::testing
