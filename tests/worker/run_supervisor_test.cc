// RunSupervisor over real processes and real signals: a fake trainer (fake_trainer.h) for events,
// exit codes, stderr tail, cancellation and PR_SET_PDEATHSIG; the real ablate-train when built.
#include "worker/run_supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/utf8_text.h"
#include "common/worker_limits.h"
#include "tests/util/subprocess.h"
#include "tests/worker/fake_trainer.h"

#ifdef ABLATE_TRAIN_BIN
#include "trainer/config/presets.h"
#include "trainer/data/shard_writer.h"
#endif

namespace ablate::worker {
namespace {

using J = nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct Collector {
  absl::Mutex mu;
  bool started ABSL_GUARDED_BY(mu) = false;
  std::vector<v1::MetricPoint> points ABSL_GUARDED_BY(mu);
  std::optional<RunResult> result ABSL_GUARDED_BY(mu);

  RunCallbacks Callbacks() {
    return {[this] { absl::MutexLock l(&mu); started = true; },
            [this](const v1::MetricPoint& p) { absl::MutexLock l(&mu); points.push_back(p); },
            [this](const RunResult& r) { absl::MutexLock l(&mu); result = r; }};
  }
};

bool ProcessGone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string pid_s, comm, state;
  stat >> pid_s >> comm >> state;
  return state == "Z" || state == "X";  // a zombie nobody has reaped yet is dead too
}

bool WaitGone(pid_t pid, milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ProcessGone(pid)) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return ProcessGone(pid);
}

class RunSupervisorTest : public ::testing::Test {
 protected:
  RunSpec Spec(const J& fake, std::vector<int32_t> gpus = {}) {
    J config = {{"untimed_steps", 1}, {"fake", fake}};
    return RunSpec{ablate::worker::testing::WriteFakeTrainer(dir_.path()),
                   RunDir(), config.dump(), "/data/ds/train_*.bin", "/data/ds/val_*.bin",
                   gpus, {}};
  }
  std::string RunDir() const { return dir_.path() + "/runs/1-a1"; }
  J Env() const { return J::parse(ablate::testing::ReadFile(RunDir() + "/env.json")); }
  pid_t WaitForPidFile() {
    for (int i = 0; i < 250; ++i) {
      std::string s = ablate::testing::ReadFile(RunDir() + "/pid");
      if (!s.empty()) return std::stoi(s);
      std::this_thread::sleep_for(milliseconds(20));
    }
    return -1;
  }
  ablate::testing::TempDir dir_;
  Collector c_;
};

TEST_F(RunSupervisorTest, OkRunStreamsPointsAndSummary) {
  RunSupervisor sup(Spec({{"steps", 5}, {"val_every", 2}}), c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_TRUE(sup.Wait(seconds(20)));
  absl::MutexLock l(&c_.mu);
  EXPECT_TRUE(c_.started);
  ASSERT_TRUE(c_.result);
  EXPECT_EQ(c_.result->status, "ok");
  EXPECT_EQ(c_.result->exit_code, 0);
  // val@0, step1, step2, val@2, step3, step4, val@4, step5, val@5
  ASSERT_EQ(c_.points.size(), 9u);
  EXPECT_TRUE(c_.points[0].has_val_loss());
  EXPECT_EQ(c_.points[0].step(), 0);
  const v1::MetricPoint& s2 = c_.points[2];
  EXPECT_EQ(s2.step(), 2);
  EXPECT_DOUBLE_EQ(s2.train_loss(), 4.9);
  EXPECT_EQ(s2.lr(), 1.0);
  EXPECT_EQ(s2.step_ms(), 10.0);
  EXPECT_EQ(s2.train_time_ms(), 10.0);
  EXPECT_EQ(s2.tokens(), 128);
  EXPECT_EQ(c_.points[8].step(), 5);
  EXPECT_EQ(c_.points[8].val_loss(), 4.0);
  const v1::RunSummary& s = c_.result->summary;
  EXPECT_EQ(s.final_val_loss(), 4.0);
  EXPECT_EQ(s.steps(), 5);
  EXPECT_EQ(s.train_time_ms(), 40.0);
  EXPECT_DOUBLE_EQ(s.mean_step_ms(), 10.0);  // 40 ms over 5 - 1 untimed steps
  EXPECT_TRUE(s.reached_target());
  EXPECT_EQ(s.target_step(), 5);
  EXPECT_EQ(J::parse(ablate::testing::ReadFile(RunDir() + "/config.json"))["fake"]["steps"], 5);
}

TEST_F(RunSupervisorTest, CpuRunHidesGpusAndPassesArguments) {
  RunSupervisor sup(Spec({{"steps", 1}}), c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_TRUE(sup.Wait(seconds(20)));
  J env = Env();
  EXPECT_EQ(env["cuda"], "");
  std::vector<std::string> argv = env["argv"];
  EXPECT_EQ(argv, (std::vector<std::string>{"--config", RunDir() + "/config.json", "--train",
                                            "/data/ds/train_*.bin", "--val", "/data/ds/val_*.bin",
                                            "--backend", "cpu"}));
}

TEST_F(RunSupervisorTest, GpuRunIsPinnedToItsGpus) {
  RunSupervisor sup(Spec({{"steps", 1}}, {1, 3}), c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_TRUE(sup.Wait(seconds(20)));
  J env = Env();
  EXPECT_EQ(env["cuda"], "1,3");
  std::vector<std::string> argv = env["argv"];
  EXPECT_EQ(argv.back(), "cuda");
}

TEST_F(RunSupervisorTest, NonZeroExitIsFailedWithTheErrorEvent) {
  RunSupervisor sup(Spec({{"steps", 2}, {"exit", 1}}), c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_TRUE(sup.Wait(seconds(20)));
  absl::MutexLock l(&c_.mu);
  EXPECT_EQ(c_.result->status, "failed");
  EXPECT_EQ(c_.result->exit_code, 1);
  EXPECT_EQ(c_.result->error, "injected failure (exit code 1)");
  EXPECT_EQ(c_.result->summary.steps(), 2);
}

TEST_F(RunSupervisorTest, ExitThreeIsNan) {
  RunSupervisor sup(Spec({{"steps", 3}, {"exit", 3}}), c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_TRUE(sup.Wait(seconds(20)));
  absl::MutexLock l(&c_.mu);
  EXPECT_EQ(c_.result->status, "nan");
  EXPECT_EQ(c_.result->exit_code, 3);
  EXPECT_EQ(c_.result->error, "train loss is not finite at step 3");
}

TEST_F(RunSupervisorTest, KeepsTheLast200LinesOfStderr) {
  RunSupervisor sup(Spec({{"steps", 1}, {"stderr_lines", 300}}), c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_TRUE(sup.Wait(seconds(20)));
  absl::MutexLock l(&c_.mu);
  const std::string& tail = c_.result->stderr_tail;
  EXPECT_EQ(std::count(tail.begin(), tail.end(), '\n'), 200);
  EXPECT_EQ(tail.rfind("stderr line 100\n", 0), 0u);
  EXPECT_NE(tail.find("stderr line 299\n"), std::string::npos);
  EXPECT_EQ(tail.find("stderr line 99\n"), std::string::npos);
}

// The coordinator refuses a result whose tail is over kMaxStderrTailBytes: the worker keeps the
// tail's end within it.
TEST_F(RunSupervisorTest, StderrTailStaysWithinTheCoordinatorsLimit) {
  RunSupervisor sup(Spec({{"steps", 1}, {"stderr_lines", 300}, {"stderr_line_bytes", 1000}}),
                    c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_TRUE(sup.Wait(seconds(20)));
  absl::MutexLock l(&c_.mu);
  const std::string& tail = c_.result->stderr_tail;
  EXPECT_LE(tail.size(), kMaxStderrTailBytes);
  EXPECT_GT(tail.size(), kMaxStderrTailBytes - 1001);
  EXPECT_NE(tail.find("stderr line 299 ..."), std::string::npos);
  EXPECT_EQ(tail.find("stderr line 200 "), std::string::npos);
}

// Issue 24: a 2401-byte line of '█' (3 bytes each) is cut at 2000 bytes on a character boundary;
// the tail is valid UTF-8, which the coordinator needs to parse the result at all.
TEST_F(RunSupervisorTest, ALongLineOfMultiByteCharactersIsCutOnACharacterBoundary) {
  RunSupervisor sup(Spec({{"steps", 1}, {"stderr_blocks", 800}}), c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_TRUE(sup.Wait(seconds(20)));
  absl::MutexLock l(&c_.mu);
  const std::string& tail = c_.result->stderr_tail;
  EXPECT_TRUE(IsValidUtf8(tail));
  std::string blocks;
  for (int i = 0; i < 666; ++i) blocks += "\xe2\x96\x88";
  EXPECT_NE(tail.find(blocks + "... (2401 bytes)\n"), std::string::npos) << tail;
}

TEST_F(RunSupervisorTest, SigtermCancels) {
  RunSupervisor sup(Spec({{"steps", 2}, {"hang", true}}), c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_GT(WaitForPidFile(), 0);
  auto t0 = std::chrono::steady_clock::now();
  sup.Cancel(seconds(10));
  ASSERT_TRUE(sup.Wait(seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(3));  // SIGTERM, not the grace
  absl::MutexLock l(&c_.mu);
  EXPECT_EQ(c_.result->status, "cancelled");
  EXPECT_EQ(c_.result->exit_code, 0);  // the trainer stopped cleanly
}

TEST_F(RunSupervisorTest, SigkillAfterGraceWhenSigtermIsIgnored) {
  RunSupervisor sup(Spec({{"steps", 1}, {"hang", true}, {"ignore_term", true}}), c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  pid_t pid = WaitForPidFile();
  ASSERT_GT(pid, 0);
  auto t0 = std::chrono::steady_clock::now();
  sup.Cancel(milliseconds(300));
  ASSERT_TRUE(sup.Wait(seconds(5)));
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(took, milliseconds(280));
  EXPECT_LT(took, seconds(3));
  EXPECT_TRUE(ProcessGone(pid));
  absl::MutexLock l(&c_.mu);
  EXPECT_EQ(c_.result->status, "cancelled");
  EXPECT_EQ(c_.result->exit_code, 128 + SIGKILL);
}

TEST_F(RunSupervisorTest, MissingTrainerFailsToStart) {
  RunSpec spec = Spec({});
  spec.trainer_path = dir_.path() + "/no-such-trainer";
  RunSupervisor sup(spec, c_.Callbacks());
  absl::Status s = sup.Start();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_TRUE(sup.done());
}

// The supervisor lives in a helper process; SIGKILL it and its trainer must die too.
TEST_F(RunSupervisorTest, ChildDiesWithTheSupervisorProcess) {
  RunSpec spec = Spec({{"steps", 1}, {"hang", true}, {"ignore_term", true}});
  pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    RunSupervisor sup(spec, {});
    if (!sup.Start().ok()) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  pid_t trainer = WaitForPidFile();
  ASSERT_GT(trainer, 0);
  EXPECT_FALSE(ProcessGone(trainer));
  ::kill(helper, SIGKILL);
  ::waitpid(helper, nullptr, 0);
  EXPECT_TRUE(WaitGone(trainer, seconds(5)));
}

#ifdef ABLATE_TRAIN_BIN
std::vector<uint16_t> ByteTokens(int64_t n, uint32_t seed) {
  std::vector<uint16_t> out;
  const std::string text = "the quick brown fox jumps over the lazy dog. ";
  for (uint32_t i = seed; int64_t(out.size()) < n; ++i) {
    if (i % 7 == 0) out.push_back(256);  // BOS
    for (char ch : text) out.push_back(uint16_t(uint8_t(ch)));
  }
  out.resize(size_t(n));
  return out;
}

TEST_F(RunSupervisorTest, RealTrainerRunsThroughTheSupervisor) {
  std::string data = dir_.path() + "/data/bytes";
  std::filesystem::create_directories(data);
  ASSERT_TRUE(WriteShard(data + "/train_000.bin", ByteTokens(40000, 1)).ok());
  ASSERT_TRUE(WriteShard(data + "/val_000.bin", ByteTokens(8000, 2)).ok());
  auto config = PresetConfig("r9-shortcuts", Scale::kTiny);
  ASSERT_TRUE(config.ok());
  J c = *config;
  c["num_iterations"] = 5;
  c["val_tokens"] = 4096;
  c["val_every"] = 2;
  RunSpec spec{ABLATE_TRAIN_BIN, RunDir(), c.dump(), data + "/train_*.bin",
               data + "/val_*.bin", {}, {"--threads", "2"}};
  RunSupervisor sup(spec, c_.Callbacks());
  ASSERT_TRUE(sup.Start().ok());
  ASSERT_TRUE(sup.Wait(seconds(100)));
  absl::MutexLock l(&c_.mu);
  ASSERT_EQ(c_.result->status, "ok") << c_.result->error << "\n" << c_.result->stderr_tail;
  EXPECT_TRUE(c_.started);
  int steps = 0, vals = 0;
  for (const v1::MetricPoint& p : c_.points) {
    if (p.has_train_loss()) {
      ++steps;
      EXPECT_EQ(p.step(), steps);
      EXPECT_TRUE(p.has_tokens());
    }
    if (p.has_val_loss()) ++vals;
  }
  EXPECT_EQ(steps, 5);
  EXPECT_EQ(vals, 4);  // steps 0, 2, 4 and the end
  const v1::RunSummary& s = c_.result->summary;
  EXPECT_EQ(s.steps(), 5);
  EXPECT_TRUE(s.has_final_val_loss());
  EXPECT_GT(s.final_val_loss(), 0.0);
  EXPECT_TRUE(s.has_train_time_ms());
}
#endif

}  // namespace
}  // namespace ablate::worker
