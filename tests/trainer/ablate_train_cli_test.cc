// ablate-train as a real child process: event stream, exit codes, knob rejection before any
// work, SIGTERM cancellation at a step boundary, NaN divergence, the CUDA seam.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tests/trainer/train_fixture.h"

namespace ablate {
namespace {

using J = nlohmann::json;

struct Child {
  pid_t pid = -1;
  FILE* out = nullptr;  // the child's stdout
};

Child Spawn(const std::vector<std::string>& args) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv = {const_cast<char*>(ABLATE_TRAIN_BIN)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(ABLATE_TRAIN_BIN, argv.data());
    _exit(127);
  }
  close(fds[1]);
  return {pid, fdopen(fds[0], "r")};
}

// Next JSON event line, or null at EOF.
J NextEvent(Child& c) {
  char* line = nullptr;
  size_t cap = 0;
  ssize_t n = getline(&line, &cap, c.out);
  J e = n > 0 ? J::parse(std::string(line, n)) : J();
  free(line);
  return e;
}

int Wait(Child& c, std::vector<J>* rest = nullptr) {
  for (J e = NextEvent(c); !e.is_null(); e = NextEvent(c)) {
    if (rest != nullptr) rest->push_back(e);
  }
  fclose(c.out);
  int status = 0;
  waitpid(c.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class AblateTrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteShards(dir_);
    std::FILE* f = std::fopen(dir_.File("run.json").c_str(), "w");
    std::fputs(testing::TinyTrainConfig().dump().c_str(), f);
    std::fclose(f);
  }
  std::vector<std::string> Args(std::vector<std::string> extra) {
    std::vector<std::string> a = {"--config", dir_.File("run.json"), "--train",
                                  dir_.File("train_*.bin"), "--val", dir_.File("val_*.bin"),
                                  "--threads", "1"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  testing::TempDir dir_;
};

TEST_F(AblateTrainCli, TrainsAndStreamsEvents) {
  Child c = Spawn(Args({}));
  std::vector<J> events;
  EXPECT_EQ(Wait(c, &events), 0);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front()["event"], "start");
  EXPECT_EQ(events.back()["event"], "end");
  EXPECT_EQ(events.back()["status"], "ok");
  int steps = 0;
  for (const J& e : events) steps += e["event"] == "step";
  EXPECT_EQ(steps, 6);
}

TEST_F(AblateTrainCli, RejectsUnknownAndOutOfRangeKnobsBeforeAnyWork) {
  for (std::string bad : {"muon.lrr=0.1", "muon.lr=-1", "n_head=3"}) {
    Child c = Spawn(Args({"--set", bad}));
    std::vector<J> events;
    EXPECT_EQ(Wait(c, &events), 2) << bad;
    ASSERT_EQ(events.size(), 1u) << bad;
    EXPECT_EQ(events[0]["event"], "error") << bad;
  }
}

// Holds with and without a GPU: device 4095 exists on no machine, so the CUDA backend is
// refused before any work, with exit 2 and a message naming CUDA (no device at all, or no such
// device index).
TEST_F(AblateTrainCli, CudaBackendRefusesADeviceThatDoesNotExist) {
  Child c = Spawn(Args({"--backend", "cuda", "--gpus", "4095"}));
  std::vector<J> events;
  EXPECT_EQ(Wait(c, &events), 2);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["event"], "error");
  const std::string message = events[0]["message"].get<std::string>();
  EXPECT_NE(message.find("CUDA"), std::string::npos) << message;
}

// Multi-GPU options the binary refuses before touching a device, on any machine: a --gpus list
// that is not one, and several nodes on the CPU backend.
TEST_F(AblateTrainCli, RefusesBadGpuListsAndCpuMultiNodeBeforeAnyWork) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--backend", "cuda", "--gpus", "3-1"}, "--gpus"},
      {{"--backend", "cuda", "--gpus", "0,0"}, "--gpus"},
      {{"--nnodes", "2", "--nccl-id-file", "id"}, "several nodes need --backend cuda"},
      {{"--backend", "cuda", "--nnodes", "2", "--nccl-id-file", "-"}, "node rank 0 writes the id"}};
  for (const auto& [args, words] : cases) {
    Child c = Spawn(Args(args));
    std::vector<J> events;
    EXPECT_EQ(Wait(c, &events), 2) << words;
    ASSERT_EQ(events.size(), 1u) << words;
    EXPECT_EQ(events[0]["event"], "error");
    std::string message = events[0]["message"];
    EXPECT_NE(message.find(words), std::string::npos) << message;
  }
}

// --checkpoint-every reads the one duration grammar (common/spec/duration.h): a bare number used to
// mean steps here and seconds in the pools file, so it is refused, saying what to write.
TEST_F(AblateTrainCli, CheckpointEveryNeedsAUnit) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"200",
       "--checkpoint-every: '200' has no unit; write 200s for seconds or 200steps for steps"},
      {"0steps", "--checkpoint-every: '0steps' is not positive"},
      {"1.5steps", "not a whole number of steps"},
      {"10min", "'10min' is not a duration; write e.g. 30s, 10m, 1h or 500steps"}};
  for (const auto& [every, words] : cases) {
    Child c = Spawn(Args({"--checkpoint-dir", dir_.File("ckpt"), "--checkpoint-every", every}));
    std::vector<J> events;
    EXPECT_EQ(Wait(c, &events), 2) << every;
    ASSERT_EQ(events.size(), 1u) << every;
    std::string message = events[0]["message"];
    EXPECT_NE(message.find(words), std::string::npos) << message;
  }
  Child c = Spawn(Args({"--max-steps", "4", "--checkpoint-dir", dir_.File("ckpt"),
                        "--checkpoint-every", "2steps"}));
  std::vector<J> events;
  EXPECT_EQ(Wait(c, &events), 0);
  std::vector<int> steps;
  for (const J& e : events) {
    if (e["event"] == "checkpoint") steps.push_back(e["step"].get<int>());
  }
  ASSERT_FALSE(steps.empty()) << "no checkpoint written";
  EXPECT_EQ(steps.front(), 2) << "every 2 steps";
  EXPECT_EQ(steps.back(), 4);
}

TEST_F(AblateTrainCli, SigtermCancelsAtAStepBoundary) {
  Child c = Spawn(Args({"--set", "num_iterations=100000", "--set", "val_every=0"}));
  J e = NextEvent(c);
  while (!e.is_null() && e["event"] != "step") e = NextEvent(c);
  ASSERT_FALSE(e.is_null());
  kill(c.pid, SIGTERM);
  std::vector<J> events;
  EXPECT_EQ(Wait(c, &events), 0);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back()["event"], "end");
  EXPECT_EQ(events.back()["status"], "cancelled");
  EXPECT_LT(events.back()["steps"].get<int>(), 100000);
}

TEST_F(AblateTrainCli, NonFiniteLossIsAnErrorWithExitCode3) {
  // Adam with eps 0 divides 0 by 0 for a parameter whose gradient is exactly zero: block 0's
  // value_lambda mixes v with itself (v1 = v), so its gradient is exactly 0 (record-presets.md,
  // r9). The parameter becomes NaN after the first step and the loss of the second is NaN.
  Child c = Spawn(Args({"--set", "value_residual=true", "--set", "adam.eps=0", "--set",
                        "val_every=0"}));
  std::vector<J> events;
  EXPECT_EQ(Wait(c, &events), 3);
  bool saw_error = false;
  for (const J& e : events) saw_error |= e["event"] == "error";
  EXPECT_TRUE(saw_error);
  EXPECT_EQ(events.back()["status"], "failed");
}

TEST_F(AblateTrainCli, HelpTeachesExitCodes) {
  Child c = Spawn({"--help"});
  char buf[8192];
  size_t n = fread(buf, 1, sizeof(buf) - 1, c.out);
  buf[n] = 0;
  fclose(c.out);
  int status = 0;
  waitpid(c.pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_NE(std::string(buf).find("Exit codes"), std::string::npos);
}

}  // namespace
}  // namespace ablate
