// `ablate verify-record`: reads the logs locally (cli/record_logs.h), runs server/stats' tests
// over them (the same code the coordinator's compare uses) and prints a report or JSON.
#include "cli/verify_record_command.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "cli/record_logs.h"
#include "cli/table.h"
#include "common/stats/record_rule.h"
#include "common/stats/sample_stats.h"
#include "common/stats/t_tests.h"

namespace ablate {
namespace {

using nlohmann::json;

// What the check needs of one log, from a file or from an imported run.
struct LogFacts {
  std::string name;
  int64_t steps = 0;
  double final_val_loss = 0;
  double train_time_ms = 0;
  double mean_step_ms = 0;
  std::string script_hash;  // "" = the log has no script
  std::string hardware;     // as nvidia-smi printed it; "" = not in the log
};

LogFacts FactsOf(const LoadedLog& l) {
  return {l.path, l.log.total_steps, l.log.final_val_loss, l.log.final_train_time_ms,
          l.log.mean_step_ms(), l.script_hash, l.log.LoggedHardware()};
}

// The previous record's runs from an imported sweep: "ID" or "ID/VARIANT".
std::optional<std::vector<LogFacts>> PreviousFromSweep(Client& c, const std::string& ref,
                                                       int* exit_code) {
  const size_t slash = ref.find('/');
  int64_t id = 0;
  try {
    id = std::stoll(ref.substr(0, slash));
  } catch (...) {
    id = 0;
  }
  if (id <= 0) {
    std::cerr << "ablate verify-record: --previous-sweep '" << ref
              << "' is not SWEEP_ID or SWEEP_ID/VARIANT\n";
    *exit_code = kExitUsage;
    return std::nullopt;
  }
  const std::string variant = slash == std::string::npos ? "" : ref.substr(slash + 1);
  v1::GetSweepRequest sreq;
  sreq.set_id(id);
  v1::Sweep sweep;
  grpc::Status st = c.stub().GetSweep(c.Context().get(), sreq, &sweep);
  if (!st.ok()) {
    *exit_code = c.Fail(st, "sweep " + std::to_string(id));
    return std::nullopt;
  }
  if (!sweep.imported()) {
    std::cerr << "ablate verify-record: sweep " << id
              << " was not imported from record logs (ablate import); its runs ran on this "
                 "cluster, not as the previous record's logs\n";
    *exit_code = kExitRejected;
    return std::nullopt;
  }
  v1::ListRunsRequest rreq;
  rreq.set_sweep_id(id);
  v1::ListRunsResponse runs;
  st = c.stub().ListRuns(c.Context().get(), rreq, &runs);
  if (!st.ok()) {
    *exit_code = c.Fail(st, "runs of sweep " + std::to_string(id));
    return std::nullopt;
  }
  std::vector<LogFacts> out;
  for (const v1::Run& r : runs.runs()) {
    if (!variant.empty() && r.variant_name() != variant) continue;
    const v1::RunSummary& s = r.summary();
    out.push_back({r.imported().file_name(), s.steps(), s.final_val_loss(), s.train_time_ms(),
                   s.mean_step_ms(), r.imported().script_hash(), r.imported().logged_hardware()});
  }
  if (out.empty()) {
    std::cerr << "ablate verify-record: sweep " << id << " has no imported run"
              << (variant.empty() ? "" : " of variant '" + variant + "'") << "\n";
    *exit_code = kExitNotFound;
    return std::nullopt;
  }
  return out;
}

std::vector<double> Values(const std::vector<LogFacts>& logs, double LogFacts::*field) {
  std::vector<double> out;
  for (const LogFacts& l : logs) out.push_back(l.*field);
  return out;
}

json SampleJson(const SampleStats& s) {
  json j = {{"n", s.n}};
  if (s.mean) j["mean"] = *s.mean;
  if (s.stddev) j["stddev"] = *s.stddev;
  if (auto lo = s.CiLow()) j["ci_low"] = *lo;
  if (auto hi = s.CiHigh()) j["ci_high"] = *hi;
  return j;
}

json TestJson(const TTestResult& t) {
  return {{"t", t.t}, {"df", t.df}, {"p_value", t.p_value}};
}

// The distinct values of a field, in first-seen order.
template <class T>
std::vector<T> Distinct(const std::vector<LogFacts>& logs, T LogFacts::*field) {
  std::vector<T> out;
  for (const LogFacts& l : logs) {
    if (std::find(out.begin(), out.end(), l.*field) == out.end()) out.push_back(l.*field);
  }
  return out;
}

std::string Short(const std::string& hash) { return hash.empty() ? "none" : hash.substr(0, 12); }

std::string Sec(double ms, int digits = 3) { return FormatDouble(ms / 1000.0, digits); }

json BuildReport(const std::vector<LogFacts>& logs, const std::vector<LogFacts>& previous,
                 const VerifyRecordOptions& o) {
  json report;
  report["target"] = o.target;
  report["alpha"] = o.alpha;
  json reasons = json::array();
  json logs_json = json::array();
  for (const LogFacts& l : logs) {
    logs_json.push_back({{"log", l.name}, {"steps", l.steps}, {"final_val_loss", l.final_val_loss},
                         {"train_time_ms", l.train_time_ms}, {"mean_step_ms", l.mean_step_ms},
                         {"script_hash", l.script_hash}, {"hardware", l.hardware}});
  }
  report["logs"] = logs_json;
  // The loss rule.
  const std::vector<double> losses = Values(logs, &LogFacts::final_val_loss);
  const RecordRuleResult rule = CheckRecordRule(losses, o.target, o.alpha);
  json loss = SampleJson(SummarizeSample(losses));
  loss["passes"] = rule.passes;
  if (rule.test) loss["test"] = TestJson(*rule.test);
  report["loss"] = loss;
  if (rule.underpowered) {
    reasons.push_back("one log cannot show a mean below the target: the t-test needs 2 or more");
  } else if (!rule.passes) {
    reasons.push_back("mean val loss is not below " + FormatDouble(o.target, 4) + " at p < " +
                      FormatDouble(o.alpha, 3) + " (p = " + FormatDouble(rule.test->p_value, 4) +
                      ")");
  }
  // Same code, same steps.
  const std::vector<std::string> scripts = Distinct(logs, &LogFacts::script_hash);
  const bool missing_script =
      std::any_of(logs.begin(), logs.end(), [](const LogFacts& l) { return l.script_hash.empty(); });
  report["scripts"] = scripts;
  report["same_script"] = scripts.size() == 1 && !missing_script;
  if (missing_script) {
    reasons.push_back("a log has no script before its output, so the code it ran is unknown");
  } else if (scripts.size() > 1) {
    reasons.push_back("the logs ran " + std::to_string(scripts.size()) + " different scripts");
  }
  const std::vector<int64_t> steps = Distinct(logs, &LogFacts::steps);
  report["steps"] = steps;
  report["same_steps"] = steps.size() == 1;
  if (steps.size() > 1) reasons.push_back("the logs ran different numbers of steps");
  // Time.
  const std::vector<double> times = Values(logs, &LogFacts::train_time_ms);
  json time = SampleJson(SummarizeSample(times));
  time["min"] = *std::min_element(times.begin(), times.end());
  time["max"] = *std::max_element(times.begin(), times.end());
  report["train_time_ms"] = time;
  report["mean_step_ms"] = SampleJson(SummarizeSample(Values(logs, &LogFacts::mean_step_ms)));
  const std::vector<std::string> hardware = Distinct(logs, &LogFacts::hardware);
  report["hardware"] = hardware;
  if (!previous.empty()) {
    json prev;
    const std::vector<double> before = Values(previous, &LogFacts::train_time_ms);
    prev["logs"] = Values(previous, &LogFacts::train_time_ms).size();
    prev["train_time_ms"] = SampleJson(SummarizeSample(before));
    const std::vector<std::string> prev_hw = Distinct(previous, &LogFacts::hardware);
    prev["hardware"] = prev_hw;
    const bool same_hw = hardware.size() == 1 && prev_hw == hardware && !hardware[0].empty();
    prev["same_hardware"] = same_hw;
    const double diff = SampleMean(times) - SampleMean(before);
    prev["difference_ms"] = diff;
    prev["relative"] = diff / SampleMean(before);
    prev["faster"] = diff < 0;
    if (std::optional<TTestResult> w = WelchTest(times, before)) {
      prev["welch"] = TestJson(*w);
      prev["ci_low_ms"] = w->difference - w->ci_half_width;
      prev["ci_high_ms"] = w->difference + w->ci_half_width;
    }
    if (!same_hw) {
      reasons.push_back(
          "the previous record's logs were not timed on the same hardware as these (as their "
          "nvidia-smi tables say), so the times do not compare");
    } else if (diff >= 0) {
      reasons.push_back("not faster than the previous record (mean train_time " + Sec(diff, 3) +
                        " s longer)");
    }
    report["previous"] = prev;
  }
  report["reasons"] = reasons;
  report["passes"] = reasons.empty();
  return report;
}

void PrintReport(const json& r) {
  const json& loss = r["loss"];
  const json& time = r["train_time_ms"];
  Table logs({"LOG", "STEPS", "FINAL VAL LOSS", "TRAIN TIME (s)", "MS/STEP", "SCRIPT"});
  for (const json& l : r["logs"]) {
    logs.AddRow({l["log"].get<std::string>(), std::to_string(l["steps"].get<int64_t>()),
                 FormatDouble(l["final_val_loss"].get<double>(), 4),
                 Sec(l["train_time_ms"].get<double>()),
                 FormatDouble(l["mean_step_ms"].get<double>(), 2),
                 Short(l["script_hash"].get<std::string>())});
  }
  logs.Print(std::cout);
  std::cout << "\nval loss: n=" << loss["n"].get<int>() << " mean "
            << FormatDouble(loss["mean"].get<double>(), 5);
  if (loss.contains("stddev")) std::cout << " sd " << FormatDouble(loss["stddev"].get<double>(), 5);
  if (loss.contains("test")) {
    std::cout << "; one-sided t-test mean < " << FormatDouble(r["target"].get<double>(), 4)
              << ": t=" << FormatDouble(loss["test"]["t"].get<double>(), 3)
              << " df=" << FormatDouble(loss["test"]["df"].get<double>(), 0)
              << " p=" << FormatDouble(loss["test"]["p_value"].get<double>(), 6) << " ("
              << (loss["passes"].get<bool>() ? "below" : "not below") << " at p < "
              << FormatDouble(r["alpha"].get<double>(), 3) << ")";
  }
  std::cout << "\ntime:     mean " << Sec(time["mean"].get<double>()) << " s";
  if (time.contains("stddev")) {
    std::cout << " sd " << Sec(time["stddev"].get<double>()) << " s, 95% CI ["
              << Sec(time["ci_low"].get<double>()) << ", " << Sec(time["ci_high"].get<double>())
              << "] s";
  }
  std::cout << ", range " << Sec(time["min"].get<double>()) << " to "
            << Sec(time["max"].get<double>()) << " s\n";
  std::cout << "script:   " << (r["same_script"].get<bool>() ? "the same in every log (" : "NOT the same (")
            << r["scripts"].size() << " distinct)\n";
  std::cout << "steps:    " << (r["same_steps"].get<bool>() ? "the same in every log" : "differ")
            << "\n";
  std::cout << "hardware: ";
  for (const json& h : r["hardware"]) {
    std::cout << (h.get<std::string>().empty() ? "(not in the log)" : h.get<std::string>())
              << "; ";
  }
  std::cout << "\n";
  if (r.contains("previous")) {
    const json& p = r["previous"];
    std::cout << "previous: " << p["logs"].get<int>() << " logs, mean "
              << Sec(p["train_time_ms"]["mean"].get<double>()) << " s; difference "
              << Sec(p["difference_ms"].get<double>()) << " s ("
              << FormatDouble(100 * p["relative"].get<double>(), 2) << "%)";
    if (p.contains("welch")) {
      std::cout << ", 95% CI [" << Sec(p["ci_low_ms"].get<double>()) << ", "
                << Sec(p["ci_high_ms"].get<double>()) << "] s, Welch t="
                << FormatDouble(p["welch"]["t"].get<double>(), 3)
                << " p=" << FormatDouble(p["welch"]["p_value"].get<double>(), 6);
    }
    std::cout << (p["same_hardware"].get<bool>() ? "" : "; NOT the same hardware") << "\n";
  }
  if (r["passes"].get<bool>()) {
    std::cout << "\nverdict: passes the record rule\n";
  } else {
    std::cout << "\nverdict: FAILS the record rule:\n";
    for (const json& why : r["reasons"]) std::cout << "  - " << why.get<std::string>() << "\n";
  }
}

}  // namespace

CLI::App* AddVerifyRecordCommand(CLI::App* app, VerifyRecordOptions* o) {
  CLI::App* cmd = app->add_subcommand(
      "verify-record",
      "the speedrun's acceptance check over the logs of one claimed record: mean val loss below "
      "3.28 (one-sided t-test, p < 0.01), one script, one step count, and faster than the "
      "previous record's logs on the same hardware (no server needed)");
  cmd->add_option("LOG", o->logs, "the claimed record's logs (modded-nanogpt's records/ format)")
      ->required();
  cmd->add_option("--previous", o->previous, "the previous record's logs");
  cmd->add_option("--previous-sweep", o->previous_sweep,
                  "or the previous record as imported (ablate import): SWEEP_ID[/VARIANT]");
  cmd->add_option("--target", o->target, "val loss the mean must be below (nats)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--alpha", o->alpha, "significance level of the loss test")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 0.5));
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->footer(
      "\nExit codes: 0 the claim passes, 1 it fails (the reasons are printed), 3 a log cannot be "
      "read (each named with its line), 2 usage.\nExample:\n"
      "  ablate verify-record new/*.txt --previous old/*.txt");
  return cmd;
}

int VerifyRecordCommand(const VerifyRecordOptions& o, Client* client) {
  std::vector<std::string> errors;
  std::vector<LoadedLog> logs = LoadRecordLogs(o.logs, o.target, &errors);
  std::vector<LoadedLog> before = LoadRecordLogs(o.previous, o.target, &errors);
  if (!errors.empty()) {
    for (const std::string& e : errors) std::cerr << "ablate verify-record: " << e << "\n";
    return kExitRejected;
  }
  std::vector<LogFacts> facts, previous;
  for (const LoadedLog& l : logs) facts.push_back(FactsOf(l));
  for (const LoadedLog& l : before) previous.push_back(FactsOf(l));
  if (!o.previous_sweep.empty()) {
    if (!o.previous.empty()) {
      std::cerr << "ablate verify-record: give --previous or --previous-sweep, not both\n";
      return kExitUsage;
    }
    int code = kExitOk;
    std::optional<std::vector<LogFacts>> got = PreviousFromSweep(*client, o.previous_sweep, &code);
    if (!got) return code;
    previous = *std::move(got);
  }
  const json report = BuildReport(facts, previous, o);
  if (o.json) {
    std::cout << report.dump() << "\n";
  } else {
    PrintReport(report);
  }
  return report["passes"].get<bool>() ? kExitOk : kExitFailure;
}

}  // namespace ablate
