// One trainer child: fork/exec from a dedicated thread (PR_SET_PDEATHSIG fires when the *thread*
// that forked exits, so that thread lives exactly as long as the child), two reader threads, and
// a wait loop that escalates SIGTERM to SIGKILL.
#include "worker/run_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/utf8_text.h"
#include "common/worker_limits.h"
#include "worker/disk_space.h"

namespace ablate::worker {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr auto kPollInterval = std::chrono::milliseconds(20);

extern "C" char** environ;

// argv and envp prepared before fork: the child may only make async-signal-safe calls.
struct ExecImage {
  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;
  void Freeze() {
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
};

// True when `entry` (NAME=value) sets a variable that one of `overrides` sets too.
bool Overridden(std::string_view entry, const std::vector<std::string>& overrides) {
  std::string_view name = entry.substr(0, entry.find('=') + 1);
  for (const std::string& o : overrides) {
    if (std::string_view(o).starts_with(name)) return true;
  }
  return false;
}

ExecImage MakeImage(const RunSpec& spec) {
  ExecImage image;
  if (!spec.argv.empty()) {
    image.args = spec.argv;  // a script run (issue 14)
  } else {
    image.args = {spec.trainer_path, "--config", spec.run_dir + "/config.json",
                  "--train", spec.train_glob, "--val", spec.val_glob,
                  "--backend", spec.gpus.empty() ? "cpu" : "cuda"};
    image.args.insert(image.args.end(), spec.extra_args.begin(), spec.extra_args.end());
  }
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("CUDA_VISIBLE_DEVICES=")) continue;
    if (!Overridden(*e, spec.env)) image.env.push_back(*e);
  }
  image.env.insert(image.env.end(), spec.env.begin(), spec.env.end());
  std::string visible;
  for (int32_t g : spec.gpus) visible += (visible.empty() ? "" : ",") + std::to_string(g);
  image.env.push_back("CUDA_VISIBLE_DEVICES=" + visible);
  image.Freeze();
  return image;
}

// In the child, between fork and exec. Writes errno to `report_fd` if exec fails.
[[noreturn]] void ExecChild(const ExecImage& image, const char* dir, pid_t parent, int out_fd,
                            int err_fd, int report_fd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the worker died before prctl took effect
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &dfl, nullptr);
  // Slurm signals every process of a job step: its USR1 ("drain soon") is the worker's to
  // handle, and would kill a trainer (no handler). Ignored dispositions survive exec.
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  ::sigaction(SIGUSR1, &ign, nullptr);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  if (::chdir(dir) == 0) ::execve(image.argv[0], image.argv.data(), image.envp.data());
  int e = errno;
  ssize_t ignored = ::write(report_fd, &e, sizeof e);
  (void)ignored;
  ::_exit(127);
}

int DecodeWait(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::optional<int64_t> UntimedSteps(const nlohmann::json& config) {
  auto it = config.find("untimed_steps");
  if (it == config.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

// Longer lines are cut into pieces of this size, so that a child printing without newlines
// cannot make the worker buffer without bound.
constexpr size_t kMaxLineBytes = size_t{8} << 20;
// Each line kept in a tail is cut to this (a 1 MB line must not make a 200 MB tail).
constexpr size_t kMaxTailLineBytes = 2000;
constexpr size_t kStdoutTailLines = 100;

// Valid UTF-8 cut on a character boundary: the coordinator cannot parse a RunFinished whose
// text is not UTF-8 (proto3 strings), and a progress bar of '█' is 3 bytes a character.
std::string ForTail(const std::string& line) {
  std::string valid = ValidUtf8(line);
  if (valid.size() <= kMaxTailLineBytes) return valid;
  return std::string(Utf8Head(valid, kMaxTailLineBytes)) + "... (" +
         std::to_string(line.size()) + " bytes)";
}

// Keeps the result within the coordinator's limits (common/worker_limits.h), valid UTF-8 and
// cut on character boundaries: the end of the tail (where the failure is) and the start of the
// error.
void BoundText(RunResult& r) {
  r.stderr_tail = std::string(Utf8Tail(ValidUtf8(r.stderr_tail), kMaxStderrTailBytes));
  r.error = std::string(Utf8Head(ValidUtf8(r.error), kMaxErrorBytes));
}

// Calls `on_line` for every complete line of `fd` and for a final unterminated one.
template <typename F>
void ReadLines(int fd, F on_line) {
  std::string buf;
  char chunk[1 << 14];
  while (true) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, size_t(n));
    size_t start = 0;
    for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
      on_line(buf.substr(start, nl - start));
    }
    buf.erase(0, start);
    if (buf.size() > kMaxLineBytes) on_line(buf), buf.clear();
  }
  if (!buf.empty()) on_line(buf);
  ::close(fd);
}

}  // namespace

struct RunSupervisor::Pipes {
  int out[2] = {-1, -1}, err[2] = {-1, -1}, report[2] = {-1, -1};
  ~Pipes() {
    for (int* p : {out, err, report}) {
      for (int i = 0; i < 2; ++i) {
        if (p[i] >= 0) ::close(p[i]);
      }
    }
  }
};

RunSupervisor::RunSupervisor(RunSpec spec, RunCallbacks callbacks)
    : spec_(std::move(spec)), callbacks_(std::move(callbacks)) {
  untimed_steps_ = UntimedSteps(nlohmann::json::parse(spec_.config_json, nullptr, false));
  if (spec_.script) {
    script_parser_ =
        std::make_unique<ScriptOutputParser>(spec_.script->format, spec_.script->target_val_loss);
  }
}

RunSupervisor::~RunSupervisor() {
  Cancel(std::chrono::milliseconds(0));
  if (supervisor_.joinable()) supervisor_.join();
}

absl::Status RunSupervisor::Start() {
  if (absl::Status s = WriteRunDir(); !s.ok()) {
    absl::MutexLock lock(&mu_);
    done_ = true;  // nothing will run: the attempt is not held any more
    return s;
  }
  std::promise<absl::Status> started;
  std::future<absl::Status> result = started.get_future();
  supervisor_ = std::thread([this, &started] { Supervise(&started); });
  return result.get();
}

absl::Status RunSupervisor::WriteRunDir() const {
  std::error_code ec;
  std::filesystem::create_directories(spec_.run_dir, ec);
  if (ec) return FileError("create " + spec_.run_dir, ec.value());
  const std::string path = spec_.run_dir + "/config.json";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return FileError("create " + path, errno);
  const std::string text = spec_.config_json + "\n";
  int err = 0;
  for (size_t done = 0; done < text.size() && err == 0;) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n > 0) done += size_t(n);
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  return err == 0 ? absl::OkStatus() : FileError("write " + path, err);
}

void RunSupervisor::Supervise(std::promise<absl::Status>* started) {
  Pipes pipes;
  absl::Status launched = Launch(pipes);
  if (!launched.ok()) {
    {
      absl::MutexLock lock(&mu_);
      done_ = true;  // before Start() returns, so done() is true once it has failed
    }
    started->set_value(launched);
    return;
  }
  started->set_value(launched);  // `started` dies with Start(): not touched after this
  // A script says nothing like ablate-train's start event: it has started once it runs.
  if (script_parser_) {
    started_ = true;
    if (callbacks_.on_start) callbacks_.on_start();
  }
  int out_fd = std::exchange(pipes.out[0], -1), err_fd = std::exchange(pipes.err[0], -1);
  std::thread out_reader([this, out_fd] { ReadStdout(out_fd); });
  std::thread err_reader([this, err_fd] { ReadStderr(err_fd); });
  WaitForExit();
  out_reader.join();
  err_reader.join();
  RunResult result = BuildResult();
  if (callbacks_.on_exit) callbacks_.on_exit(result);
  absl::MutexLock lock(&mu_);
  done_ = true;
}

absl::Status RunSupervisor::Launch(Pipes& p) {
  ExecImage image = MakeImage(spec_);
  if (::pipe2(p.out, O_CLOEXEC) != 0 || ::pipe2(p.err, O_CLOEXEC) != 0 ||
      ::pipe2(p.report, O_CLOEXEC) != 0) {
    return absl::InternalError(std::string("pipe: ") + std::strerror(errno));
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) ExecChild(image, spec_.run_dir.c_str(), parent, p.out[1], p.err[1], p.report[1]);
  ::setpgid(pid, pid);  // also done in the child; whichever runs first wins the race
  for (int* fd : {&p.out[1], &p.err[1], &p.report[1]}) ::close(std::exchange(*fd, -1));
  int child_errno = 0;
  ssize_t n;
  while ((n = ::read(p.report[0], &child_errno, sizeof child_errno)) < 0 && errno == EINTR) {
  }
  if (n > 0) {
    ::waitpid(pid, nullptr, 0);
    return absl::NotFoundError("cannot execute " + spec_.trainer_path + ": " +
                               std::strerror(child_errno));
  }
  absl::MutexLock lock(&mu_);
  pid_ = pid;
  return absl::OkStatus();
}

// Polls for the exit without reaping (WNOWAIT), so that the process group id stays ours while
// stragglers are killed; then reaps.
void RunSupervisor::WaitForExit() {
  absl::MutexLock lock(&mu_);
  while (true) {
    siginfo_t info{};
    if (::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) {
      break;
    }
    if (kill_at_ && SteadyClock::now() >= *kill_at_) ::killpg(pid_, SIGKILL), kill_at_.reset();
    mu_.AwaitWithTimeout(absl::Condition(&wake_), absl::FromChrono(kPollInterval));
    wake_ = false;
  }
  ::killpg(pid_, SIGKILL);  // anything the trainer left behind in its group
  while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

void RunSupervisor::Cancel(std::chrono::milliseconds grace) {
  absl::MutexLock lock(&mu_);
  if (pid_ < 0 || reaped_) return;
  auto kill_at = SteadyClock::now() + grace;
  if (!cancel_requested_) {
    cancel_requested_ = true;
    ::killpg(pid_, SIGTERM);
  }
  if (!kill_at_ || kill_at < *kill_at_) kill_at_ = kill_at;
  wake_ = true;
}

bool RunSupervisor::Wait(std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&done_), absl::FromChrono(timeout));
}

bool RunSupervisor::done() const {
  absl::MutexLock lock(&mu_);
  return done_;
}

pid_t RunSupervisor::pid() const {
  absl::MutexLock lock(&mu_);
  return pid_;
}

void RunSupervisor::ReadStdout(int fd) {
  std::ofstream log(spec_.run_dir + (script_parser_ ? "/stdout.log" : "/events.jsonl"),
                    std::ios::app);
  ReadLines(fd, [&](const std::string& line) {
    log << line << "\n";
    HandleLine(line);
  });
  if (pending_point_ && callbacks_.on_point) callbacks_.on_point(*pending_point_);
  pending_point_.reset();
}

void RunSupervisor::HandleScriptLine(const std::string& line) {
  ScriptLine parsed = script_parser_->Parse(line);
  switch (parsed.kind) {
    case ScriptLine::Kind::kPoint:
      if (pending_point_ && pending_point_->step() == parsed.point.step()) {
        pending_point_->MergeFrom(parsed.point);
        return;
      }
      if (pending_point_ && callbacks_.on_point) callbacks_.on_point(*pending_point_);
      pending_point_ = std::move(parsed.point);
      return;
    case ScriptLine::Kind::kError: last_error_ = parsed.message; break;
    case ScriptLine::Kind::kEnd: return;
    case ScriptLine::Kind::kIgnored: break;
  }
  stdout_tail_.push_back(ForTail(line));  // what the parser did not take, for the person
  if (stdout_tail_.size() > kStdoutTailLines) stdout_tail_.pop_front();
}

void RunSupervisor::HandleLine(const std::string& line) {
  if (script_parser_) return HandleScriptLine(line);
  std::optional<TrainerEvent> event = ParseTrainerEvent(line);
  if (!event) return;
  switch (event->kind) {
    case EventKind::kStart:
      started_ = true;
      if (auto it = event->body.find("config"); it != event->body.end()) {
        if (auto u = UntimedSteps(*it)) untimed_steps_ = u;
      }
      if (std::optional<ResumedFrom> r = ResumedFromStart(event->body); r && callbacks_.on_resumed) {
        callbacks_.on_resumed(r->step, r->path);
      }
      if (callbacks_.on_start) callbacks_.on_start();
      break;
    case EventKind::kStep:
    case EventKind::kVal: {
      std::optional<v1::MetricPoint> point = PointFromEvent(*event);
      if (!point) break;
      if (event->kind == EventKind::kStep) last_step_ = *point;
      if (callbacks_.on_point) callbacks_.on_point(*point);
      break;
    }
    case EventKind::kEnd: end_event_ = std::move(event->body); break;
    case EventKind::kError: last_error_ = event->body.value("message", std::string()); break;
    case EventKind::kOther: break;
  }
}

void RunSupervisor::ReadStderr(int fd) {
  std::ofstream log(spec_.run_dir + "/stderr.log", std::ios::app);
  ReadLines(fd, [&](const std::string& line) {
    log << line << "\n";
    stderr_tail_.push_back(ForTail(line));
    if (stderr_tail_.size() > kStderrTailLines) stderr_tail_.pop_front();
  });
}

RunResult RunSupervisor::BuildResult() {
  ExitFacts facts;
  {
    absl::MutexLock lock(&mu_);
    facts.exit_code = DecodeWait(wait_status_);
    facts.signaled = WIFSIGNALED(wait_status_);
    facts.cancel_requested = cancel_requested_;
  }
  if (script_parser_) {
    RunResult r;
    r.exit_code = facts.exit_code;
    ScriptExitFacts script{facts.exit_code, facts.signaled, facts.cancel_requested,
                           script_parser_->val_points(), script_parser_->saw_non_finite(),
                           last_error_, spec_.script->val_lines_expected};
    ExitVerdict v = ClassifyScriptExit(script);
    r.status = v.status;
    r.error = v.error;
    return BuildScriptResult(std::move(r));
  }
  if (end_event_) facts.end_status = end_event_->value("status", std::string());
  facts.last_error = last_error_;
  ExitVerdict verdict = ClassifyExit(facts);
  RunResult r{verdict.status, facts.exit_code, verdict.error, "", {}, started_};
  for (const std::string& line : stderr_tail_) r.stderr_tail += line + "\n";
  BoundText(r);
  if (end_event_) {
    r.summary = SummaryFromEnd(*end_event_, untimed_steps_);
  } else if (last_step_) {  // no end event: what the steps told us
    r.summary.set_steps(last_step_->step());
    if (last_step_->has_train_time_ms()) r.summary.set_train_time_ms(last_step_->train_time_ms());
  }
  return r;
}

// The tail shows the script's unparsed stdout lines, then its stderr (scripts print to both).
RunResult RunSupervisor::BuildScriptResult(RunResult r) {
  r.started = started_;
  r.summary = script_parser_->Summary();
  if (!stdout_tail_.empty()) {
    r.stderr_tail += "--- stdout (lines not read as metrics) ---\n";
    for (const std::string& line : stdout_tail_) r.stderr_tail += line + "\n";
    r.stderr_tail += "--- stderr ---\n";
  }
  for (const std::string& line : stderr_tail_) r.stderr_tail += line + "\n";
  BoundText(r);
  return r;
}

}  // namespace ablate::worker
