// An ssh pool's hosts: observe -> fence -> bring up what the runs want -> stop the idle.
#include "server/pools/ssh_provider.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>
#include <sstream>

#include "absl/strings/match.h"
#include "common/script_command.h"
#include "common/token_file.h"
#include "nlohmann/json.hpp"
#include "server/core/ssh_worker_id.h"
#include "server/pools/scaler.h"

namespace ablate {
namespace {

void SshLog(const std::string& line) {
  std::cerr << "ablate-coordinator: pools: " << line << std::endl;
}

// The wrapper that outlives the SSH session: it records its pid, passes SIGTERM on to the
// worker, and writes the worker's exit status when it ends. Its arguments are the worker's argv.
constexpr char kWrapper[] = R"(echo $$ > pid
trap 'kill -TERM "$w" 2>/dev/null' TERM INT
"$@" >> worker.log 2>&1 &
w=$!
while :; do wait "$w"; rc=$?; kill -0 "$w" 2>/dev/null || break; done
echo "$rc" > exit.new && mv exit.new exit
)";

// What the node's files say, as one line: "none", "running N", or "exited N STATUS" followed
// by the end of the log. The pid must still be the wrapper (its command line names run.sh).
std::string ObserveScript(const std::string& node) {
  const std::string q = ShellQuote(node);
  return "n=$(cat " + q + "/current 2>/dev/null) || { echo none; exit 0; }\n"
         "d=" + q + "/$n\n"
         "p=$(cat \"$d/pid\" 2>/dev/null)\n"
         "if [ -f \"$d/exit\" ]; then echo \"exited $n $(cat \"$d/exit\")\"; "
         "tail -c 600 \"$d/worker.log\" 2>/dev/null\n"
         "elif [ -n \"$p\" ] && kill -0 \"$p\" 2>/dev/null && "
         "tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null | grep -q run.sh; then echo \"running $n\"\n"
         "else echo \"exited $n -1\"; tail -c 600 \"$d/worker.log\" 2>/dev/null; fi\n";
}

std::string SshTrim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  size_t at = 0;
  while (at < s.size() && (s[at] == '\n' || s[at] == ' ')) ++at;
  return s.substr(at);
}

// The failing checks of `ablate-worker --check --json`, as "check: text; ...".
std::string PreflightFailures(const std::string& json_text) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("checks") || !j["checks"].is_array()) {
    return "";
  }
  std::string out;
  for (const auto& c : j["checks"]) {
    if (!c.is_object() || c.value("state", "") != "fail") continue;
    out += (out.empty() ? "" : "; ") + c.value("check", std::string("?")) + ": " +
           c.value("text", std::string());
  }
  return out;
}

}  // namespace

SshProvider::SshProvider(PoolConfig pool, Dispatcher* dispatcher, SshProviderOptions options)
    : config_(std::move(pool)),
      dispatcher_(dispatcher),
      options_(std::move(options)),
      runner_(options_.command_timeout) {
  if (!config_.worker.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(config_.worker.token_file);
    if (token.ok()) {
      token_ = *token;
    } else {
      token_error_ = "pool '" + config_.name + "': worker.token_file: " +
                     std::string(token.status().message());
    }
  }
  SshOptions o;
  o.identity_file = config_.ssh.identity_file;
  o.known_hosts = config_.ssh.known_hosts;
  o.accept_new_host_keys = config_.ssh.accept_new_host_keys;
  o.ssh_args = config_.ssh.ssh_args;
  o.control_dir = options_.control_dir;
  for (const SshHost& h : config_.ssh.hosts) {
    Host host;
    host.host = h;
    host.ssh = std::make_unique<SshTransport>(h, o, &runner_);
    host.status.host = h.text;
    host.status.key = h.key;
    host.status.state = "unknown";
    hosts_.push_back(std::move(host));
  }
  Publish({}, 0);
}

SshProvider::~SshProvider() {
  for (Host& h : hosts_) h.ssh->Close();
}

std::string SshProvider::NodeDir(const Host& h) const {
  return config_.worker.work_dir + "/ssh-" + h.host.key;
}

void SshProvider::SetState(Host& h, const std::string& state, int64_t now_ms) {
  if (h.status.state != state) h.status.since_ms = now_ms;
  h.status.state = state;
}

void SshProvider::Failed(Host& h, const std::string& error, bool retry_helps, int64_t now_ms) {
  h.status.error = error;
  if (!retry_helps || ++h.failures >= options_.max_failures) {
    if (h.status.state != "bad") {
      SshLog("ssh pool '" + config_.name + "': host " + h.host.text + " marked bad" +
          (retry_helps ? " after " + std::to_string(h.failures) + " failures in a row" : "") +
          ": " + error);
    }
    SetState(h, "bad", now_ms);
    return;
  }
  const int64_t backoff = std::min<int64_t>(
      options_.max_backoff_ms, options_.backoff_ms << std::min(h.failures - 1, 20));
  h.status.retry_ms = now_ms + backoff;
  SshLog("ssh pool '" + config_.name + "': host " + h.host.text + ": " + error + " (retry in " +
      std::to_string(backoff / 1000) + " s)");
  SetState(h, "backoff", now_ms);
}

int64_t SshProvider::commands() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

CommandOutput SshProvider::Counted(const CommandOutput& out) {
  absl::MutexLock lock(&mu_);
  ++calls_;
  return out;
}

absl::StatusOr<SshProvider::Seen> SshProvider::Observe(Host& h) {
  CommandOutput out = Counted(h.ssh->Run(ObserveScript(NodeDir(h))));
  if (absl::Status s = h.ssh->Check(out, "looking at its worker"); !s.ok()) return s;
  std::istringstream in(out.out);
  std::string word;
  Seen seen;
  in >> word;
  if (word == "none") return seen;
  if (!(in >> seen.incarnation) || seen.incarnation < 0) {
    return absl::FailedPreconditionError("host " + h.host.text + ": its " + NodeDir(h) +
                                         "/current is not a start this coordinator made");
  }
  if (word == "running") {
    seen.kind = Seen::kRunning;
    return seen;
  }
  seen.kind = Seen::kExited;
  in >> seen.exit_status;
  std::string rest((std::istreambuf_iterator<char>(in)), {});
  seen.log_tail = SshTrim(rest);
  if (size_t nl = seen.log_tail.rfind('\n', seen.log_tail.size() - 1);
      nl != std::string::npos && seen.log_tail.size() - nl > 1) {
    // The last line says most: what the worker said before it stopped.
    seen.log_tail = seen.log_tail.substr(nl + 1);
  }
  return seen;
}

absl::Status SshProvider::BringUp(Host& h, int64_t now_ms) {
  const auto start = std::chrono::steady_clock::now();
  if (!token_error_.empty()) return absl::FailedPreconditionError(token_error_);
  SetState(h, "starting", now_ms);
  Publish({}, 0);  // shows "starting" while the bundle is copied
  absl::StatusOr<PushedBundle> bundle = h.ssh->PushBundle(config_.ssh.bundle,
                                                          config_.worker.bundle_dir);
  Counted({});
  if (!bundle.ok()) return bundle.status();
  const int64_t n = h.status.incarnation + 1;
  const std::string node = NodeDir(h);
  const std::string dir = node + "/" + std::to_string(n);
  std::vector<std::string> common = {"--work-dir", dir + "/work", "--data-dir",
                                     config_.worker.data_dir.empty() ? node + "/data"
                                                                     : config_.worker.data_dir,
                                     "--cpu-slots", std::to_string(config_.worker.cpu_slots)};
  if (config_.gpus_per_node == 0) common.insert(common.end(), {"--gpus", "none"});
  if (!config_.worker.checkpoint_dir.empty()) {
    common.insert(common.end(), {"--checkpoint-dir", config_.worker.checkpoint_dir});
  }
  common.insert(common.end(), config_.worker.args.begin(), config_.worker.args.end());
  const std::string worker = bundle->dir + "/bin/ablate-worker";

  std::vector<std::string> check = {worker, "--check", "--json"};
  check.insert(check.end(), common.begin(), common.end());
  CommandOutput pre = Counted(h.ssh->RunArgv(check));
  if (pre.exit_code == 255) return h.ssh->Check(pre, "running ablate-worker --check");
  if (pre.exit_code != 0) {
    std::string failures = PreflightFailures(pre.out);
    if (failures.empty()) failures = SshTrim(pre.err.empty() ? pre.out : pre.err);
    return absl::FailedPreconditionError("host " + h.host.text +
                                         ": ablate-worker --check failed there: " + failures);
  }
  if (!token_.empty()) {
    if (absl::Status s = h.ssh->WriteSecret(node + "/token", token_); !s.ok()) return s;
    Counted({});
  }
  std::vector<std::string> argv = {worker, "--coordinator", options_.coordinator_address,
                                   "--pool", config_.name, "--ssh-host", h.host.key,
                                   "--incarnation", std::to_string(n)};
  if (!token_.empty()) argv.insert(argv.end(), {"--token-file", node + "/token"});
  argv.insert(argv.end(), common.begin(), common.end());
  std::string words;
  for (const std::string& a : argv) words += " " + ShellQuote(a);
  const std::string qd = ShellQuote(dir), qn = ShellQuote(node);
  std::string unit = "ablate-worker-" + config_.name + "-" + h.host.key + "-" + std::to_string(n);
  for (char& c : unit) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  // The older incarnations' folders go but the last three (their logs say what happened).
  const std::string start_line =
      "set -e; rm -rf " + qd + "; mkdir -p " + qd + "/work && cd " + qd +
      " && cat > run.sh && printf '%s\\n' " + std::to_string(n) + " > " + qn +
      "/current.new && mv " + qn + "/current.new " + qn + "/current && "
      // Detached so that it outlives this SSH session: a transient systemd user unit where the
      // node's user manager outlives logins (lingering), else a session of its own.
      "if command -v systemd-run > /dev/null 2>&1 && "
      "[ \"$(loginctl show-user \"$(id -un)\" -p Linger --value 2>/dev/null)\" = yes ] && "
      "systemctl --user show-environment > /dev/null 2>&1; then "
      "systemd-run --user --collect --quiet --unit=" + unit + " --working-directory=\"$PWD\" "
      "sh ./run.sh" + words + " < /dev/null > /dev/null 2>&1; "
      "echo 'detached: systemd user unit " + unit + "'; "
      "else setsid -f sh ./run.sh" + words + " < /dev/null > /dev/null 2>&1; "
      "echo 'detached: own session'; fi; "
      "i=0; while [ ! -s pid ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done; "
      "cd " + qn + " && ls -1 | grep -E '^[0-9]+$' | sort -n | head -n -3 | xargs -r rm -rf";
  CommandOutput started = Counted(h.ssh->Run(start_line, kWrapper));
  if (absl::Status s = h.ssh->Check(started, "starting its worker"); !s.ok()) return s;
  h.status.incarnation = n;
  h.status.last_start_copied = bundle->copied;
  h.status.started_as.clear();
  if (size_t at = started.out.find("detached: "); at != std::string::npos) {
    h.status.started_as = SshTrim(started.out.substr(at + 10, 200));
    if (size_t nl = h.status.started_as.find('\n'); nl != std::string::npos) {
      h.status.started_as.resize(nl);
    }
  }
  h.status.last_start_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count();
  h.idle_since_ms = now_ms;
  h.fenced = false;
  SshLog("ssh pool '" + config_.name + "': started worker " + SshWorkerId(config_.name, h.host.key) +
      " (incarnation " + std::to_string(n) + ") on " + h.host.text + " in " +
      std::to_string(h.status.last_start_ms) + " ms" +
      (bundle->copied ? ", bundle copied" : ", bundle already there") +
      (h.status.started_as.empty() ? "" : ", as " + h.status.started_as));
  return absl::OkStatus();
}

absl::Status SshProvider::StopWorker(Host& h) {
  const std::string pid = NodeDir(h) + "/" + std::to_string(h.status.incarnation) + "/pid";
  CommandOutput out =
      Counted(h.ssh->Run("kill -TERM \"$(cat " + ShellQuote(pid) + ")\" 2>/dev/null || true"));
  return h.ssh->Check(out, "stopping its worker");
}

absl::StatusOr<std::string> SshProvider::Act(const std::string& pool, const std::string& host,
                                             const std::string& action) {
  std::vector<const SshHost*> chosen;
  std::string names;
  for (const SshHost& h : config_.ssh.hosts) {
    names += (names.empty() ? "" : ", ") + h.text;
    if (host.empty() || host == h.text || host == h.key) chosen.push_back(&h);
  }
  if (chosen.empty()) {
    return absl::NotFoundError("'" + host + "' is not a host of ssh pool '" + pool +
                               "' (its hosts: " + names + ")");
  }
  std::string done;
  absl::MutexLock lock(&mu_);
  for (const SshHost* h : chosen) {
    const std::string worker = SshWorkerId(config_.name, h->key);
    if (action == "resume") {
      holds_.erase(h->key);
      resumed_.insert(h->key);
    } else {
      holds_[h->key] = action;
    }
    // The dispatcher stops (or resumes) giving it runs at once, before the loop's pass.
    dispatcher_->OnDraining(worker, action != "resume");
    done += (done.empty() ? "" : "; ") + h->text + ": " +
            (action == "drain"     ? "drained: no new runs, its worker stops once idle"
             : action == "release" ? "released: its worker stops now, its runs are requeued"
                                   : "resumed: brought up again when runs want it");
  }
  SshLog("ssh pool '" + config_.name + "': " + done);
  return done;
}

void SshProvider::Poll(const std::map<std::string, PoolWant>& want, int64_t seen_ms) {
  std::set<std::string> resumed;
  {
    absl::MutexLock lock(&mu_);
    holds_seen_ = holds_;
    resumed.swap(resumed_);
  }
  for (Host& h : hosts_) {
    if (!resumed.count(h.host.key)) continue;
    h.failures = 0;
    if (h.status.state == "bad" || h.status.state == "backoff") SetState(h, "down", seen_ms);
  }
  // 1. What each host's worker is doing.
  for (Host& h : hosts_) {
    const std::string was = h.status.state;
    if (was == "bad") continue;
    if (was == "backoff" && seen_ms < h.status.retry_ms) continue;
    absl::StatusOr<Seen> seen = Observe(h);
    if (!seen.ok()) {
      if (absl::IsUnavailable(seen.status())) {
        if (was != "unreachable") SshLog(std::string(seen.status().message()));
        h.status.error = std::string(seen.status().message());
        h.fenced = h.fenced || h.status.incarnation > 0;
        SetState(h, "unreachable", seen_ms);
      } else {
        Failed(h, std::string(seen.status().message()), /*retry_helps=*/false, seen_ms);
      }
      continue;
    }
    if (seen->incarnation > h.status.incarnation) h.status.incarnation = seen->incarnation;
    if (seen->kind == Seen::kRunning) {
      if (h.fenced) {
        // Reachable again, but its worker was fenced while it was not: start afresh.
        SshLog("ssh pool '" + config_.name + "': host " + h.host.text +
            " answers again; its fenced worker is stopped (a new one starts when runs want the host)");
        (void)StopWorker(h);
        SetState(h, "down", seen_ms);
        h.fenced = false;
        continue;
      }
      if (was == "unknown") {
        SshLog("ssh pool '" + config_.name + "': adopted worker " +
            SshWorkerId(config_.name, h.host.key) + " (incarnation " +
            std::to_string(seen->incarnation) + ") on " + h.host.text);
        h.idle_since_ms = seen_ms;
      }
      if (was != "stopping") SetState(h, "up", seen_ms);
      if (h.status.state == "up" && was != "up" && was != "unknown") h.status.error.clear();
      continue;
    }
    h.fenced = false;
    if (seen->kind == Seen::kExited && was != "stopping" && was != "unknown" && was != "down" &&
        was != "backoff") {
      // It ended unasked: a crash, a kill, the node's OOM killer.
      std::string why = "its worker (incarnation " + std::to_string(seen->incarnation) + ") " +
                        (seen->exit_status < 0 ? std::string("is gone")
                                               : "exited with status " +
                                                     std::to_string(seen->exit_status)) +
                        (seen->log_tail.empty() ? "" : ": " + seen->log_tail);
      Failed(h, why, /*retry_helps=*/true, seen_ms);
      continue;
    }
    if (was == "stopping") h.failures = 0;
    if (was != "backoff") SetState(h, "down", seen_ms);
  }

  // 2. Fence the workers of hosts whose worker is not the one running now.
  std::map<int64_t, Dispatcher::RunningAllocation> running;
  for (const Host& h : hosts_) {
    if (h.status.state == "up" || h.status.state == "stopping") {
      running[SshAllocationId(h.host.key)] = {static_cast<int>(h.status.incarnation), 0};
    }
  }
  dispatcher_->FenceAllocations(config_.name, running, seen_ms,
                                "the worker its ssh pool started on that node is gone (dead, "
                                "restarted or its host unreachable; see `ablate pools`)",
                                /*exact=*/true);

  // 3. Bring up hosts for the runs that wait, and min_nodes.
  std::map<int64_t, int> busy = dispatcher_->RunsByAllocation(config_.name);
  std::map<std::string, WorkerAllocation> connected = dispatcher_->WorkerAllocations();
  std::vector<HeldAllocation> held;
  for (Host& h : hosts_) {
    h.status.runs = busy[SshAllocationId(h.host.key)];
    h.status.connected = connected.count(SshWorkerId(config_.name, h.host.key)) > 0;
    if (h.status.connected && h.status.state == "up") h.failures = 0;  // it came up for real
    if (h.status.state == "up") held.push_back({SshAllocationId(h.host.key), 1, false});
  }
  auto w = want.find(config_.name);
  const std::vector<int> none;
  ScalerDecision d = ScalePool({config_.gpus_per_node, config_.worker.cpu_slots, config_.max_nodes},
                               w == want.end() ? none : w->second.runs, held);
  const int wanted_nodes = d.wanted.count(1) ? d.wanted.at(1) : 0;
  const int keep = std::max(config_.ssh.min_nodes, wanted_nodes);
  int to_start = std::max(0, keep - static_cast<int>(held.size()));
  for (Host& h : hosts_) {
    if (to_start == 0) break;
    if (holds_seen_.count(h.host.key)) continue;
    const std::string& st = h.status.state;
    if (!(st == "down" || (st == "backoff" && seen_ms >= h.status.retry_ms))) continue;
    absl::Status s = BringUp(h, seen_ms);
    if (!s.ok()) {
      Failed(h, std::string(s.message()), absl::IsUnavailable(s) ||
                                              absl::StrContains(s.message(), "disk is full") ||
                                              absl::StrContains(s.message(), "starting its worker"),
             seen_ms);
      continue;
    }
    SetState(h, "up", seen_ms);
    h.status.error.clear();
    --to_start;
  }

  // 4. Held hosts: a released worker stops now, a drained one once idle. Then workers idle for
  // idle_exit beyond what is wanted.
  for (Host& h : hosts_) {
    auto hold = holds_seen_.find(h.host.key);
    if (hold == holds_seen_.end() || h.status.state != "up") continue;
    const std::string worker = SshWorkerId(config_.name, h.host.key);
    dispatcher_->OnDraining(worker, true);  // again: a reconnected worker's Hello clears it
    if (hold->second == "drain" && h.status.runs > 0) continue;
    if (!StopWorker(h).ok()) continue;
    SshLog("ssh pool '" + config_.name + "': stopping the " + hold->second + "ed worker on " +
           h.host.text);
    SetState(h, "stopping", seen_ms);
  }
  int up = 0;
  for (Host& h : hosts_) {
    if (h.status.state != "up" || holds_seen_.count(h.host.key)) continue;
    ++up;
    if (h.status.runs > 0 || !h.status.connected) h.idle_since_ms = seen_ms;
  }
  for (auto it = hosts_.rbegin(); it != hosts_.rend() && up > keep; ++it) {
    Host& h = *it;
    if (h.status.state != "up" || holds_seen_.count(h.host.key) || seen_ms - h.idle_since_ms < config_.idle_exit_ms) continue;
    if (absl::Status s = StopWorker(h); !s.ok()) continue;
    SshLog("ssh pool '" + config_.name + "': stopping idle worker on " + h.host.text + " (idle " +
        std::to_string((seen_ms - h.idle_since_ms) / 1000) + " s)");
    dispatcher_->OnDraining(SshWorkerId(config_.name, h.host.key), true);
    SetState(h, "stopping", seen_ms);
    --up;
  }
  Publish(d.wanted, seen_ms);
}

void SshProvider::Publish(const std::map<int, int>& wanted, int64_t seen_ms) {
  std::vector<SshHostStatus> hosts;
  std::string starting, bad;
  int usable = 0;
  for (const Host& h : hosts_) {
    hosts.push_back(h.status);
    // A held host that is down shows its hold.
    if (auto hold = holds_seen_.find(h.host.key);
        hold != holds_seen_.end() && h.status.state == "down") {
      hosts.back().state = hold->second == "drain" ? "drained" : "released";
    }
    if (h.status.state == "starting") starting += (starting.empty() ? "" : ", ") + h.host.text;
    if (h.status.state != "bad") ++usable;
    if (h.status.state == "bad" && bad.empty()) bad = h.status.error;
  }
  std::string waiting;
  if (!token_error_.empty()) {
    waiting = "ssh pool '" + config_.name + "' starts no workers: " + token_error_;
  } else if (usable == 0) {
    waiting = "every host of ssh pool '" + config_.name + "' is bad (`ablate pools`): " + bad;
  } else if (!starting.empty()) {
    waiting = "waiting for ssh pool '" + config_.name + "': starting a worker on " + starting;
  }
  absl::MutexLock lock(&mu_);
  published_ = std::move(hosts);
  if (seen_ms > 0) {
    wanted_ = wanted;
    polled_ms_ = seen_ms;
  }
  waiting_ = waiting;
}

absl::Status SshProvider::CheckShape(const PoolConfig& config, int nodes, int gpus_per_run) {
  if (nodes > 1) {
    return absl::InvalidArgumentError(
        "pool: '" + config.name + "' is an ssh pool, whose runs stay on one node: runs of " +
        std::to_string(gpus_per_run) + " GPUs need " + std::to_string(nodes) +
        " nodes (at most gpus_per_node = " + std::to_string(config.gpus_per_node) + ")");
  }
  return absl::OkStatus();
}

std::vector<PoolStatus> SshProvider::Snapshot() const {
  PoolStatus s;
  s.config = config_;
  absl::MutexLock lock(&mu_);
  s.hosts = published_;
  s.wanted = wanted_;
  s.polled_ms = polled_ms_;
  s.error = token_error_;
  return {s};
}

std::string SshProvider::Waiting(const std::string& pool) const {
  if (pool != config_.name) return "";
  absl::MutexLock lock(&mu_);
  return waiting_;
}

}  // namespace ablate
