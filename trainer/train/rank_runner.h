// One rank's training loop: its engine (model replica and optimizer on the plan's backend), data
// slices and the collectives that keep the ranks in lock step. Every decision (stop, diverge,
// fail) is taken on values reduced over ranks (the step reports), so all ranks leave the loop
// at the same step. On a GPU the loop runs one step ahead of what it reports: step s + 1 is
// queued before step s is collected and emitted. Internal to trainer/train.
#ifndef ABLATE_TRAINER_TRAIN_RANK_RUNNER_H_
#define ABLATE_TRAINER_TRAIN_RANK_RUNNER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "trainer/data/token_loader.h"
#include "trainer/data/val_loader.h"
#include "trainer/collectives/communicator.h"
#include "trainer/train/engine.h"
#include "trainer/train/event_sink.h"
#include "trainer/train/run_plan.h"
#include "trainer/train/trainer.h"

namespace ablate {

class RankRunner {
 public:
  // events: non-null on the emitting rank only; start: the `start` event it emits once its
  // engine is made (with gpu_memory added on a GPU), also when that fails (then error, end).
  RankRunner(const RunPlan& plan, Communicator& comm, TokenLoader train, ValLoader val,
             EventSink* events, const nlohmann::json* start = nullptr);
  TrainOutcome Run();

 private:
  Status Init();
  Status Evaluate(int64_t step);
  // Queues train step `step` on the engine (no wait on a GPU).
  Status QueueStep(int64_t step);
  // Collects the queued steps up to `last` in order: accounts their time, emits them, and takes
  // the decisions their reports carry (an error for divergence or a failed data read, stopping_
  // for a stop request).
  Status CollectThrough(int64_t last);
  // Steps queued ahead of the one collected: the plan's choice, else the engine's.
  int InFlight() const;
  // After a failure of this rank alone: tells the process's other ranks (why, labelled with
  // this rank) and aborts the communicator, so that no rank waits forever and the engine can be
  // torn down. False when another rank had raised the signal first.
  bool AbortPeers(const std::string& why);
  // Restores a checkpoint (plan_.resume) or loads --init-from weights, after the engine's Init.
  Status Restore();
  // At the boundary before step `step` (all earlier steps queued): whether a checkpoint or a
  // weights save is due, and writing them (rank 0 writes; collecting the state is collective).
  bool CheckpointDue(int64_t step) const;
  Status WriteCheckpointAt(int64_t step, bool val_ran);
  Status SaveWeightsAt(int64_t step);
  // Rank 0's clock: whether to ask, in this step's report, for a checkpoint.
  bool RequestCheckpoint();
  void EmitStep(int64_t step, double loss, double step_ms);
  void EmitStart();
  void EmitEnd();
  // gpu_memory of the start and end events: the engine's sample, or nothing on the CPU.
  void AddMemory(nlohmann::json& event);
  void Emit(const nlohmann::json& event) {
    if (events_ != nullptr) events_->Emit(event);
  }

  const RunPlan& plan_;
  Communicator& comm_;
  TokenLoader train_;
  ValLoader val_;
  EventSink* events_;
  const nlohmann::json* start_;
  std::unique_ptr<Engine> engine_;  // made by Init
  std::vector<int32_t> batch_;      // (B, T+1)
  TrainOutcome outcome_;
  int64_t next_queued_ = 0;      // the next step to queue
  int64_t next_collected_ = 0;   // the next step to collect
  bool stopping_ = false;        // a collected report asked to stop
  bool agreed_failure_ = false;  // the failure came from a reduced report: every rank has it
  std::string data_error_;       // this rank's failed batch read, for the message
  int64_t start_step_ = 0;          // 0, or the resumed checkpoint's steps_done
  int64_t val_done_at_ = -1;        // a step whose validation the checkpoint already has
  bool checkpoint_requested_ = false;  // a collected report asked for a checkpoint
  bool request_sent_ = false;          // rank 0 asked and the checkpoint is not written yet
  std::chrono::steady_clock::time_point last_checkpoint_;
  int64_t steps_done_ = 0;
  double train_ms_ = 0;
  std::optional<double> final_val_;
  std::optional<double> time_to_target_ms_;
  std::optional<int64_t> target_step_;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_RANK_RUNNER_H_
