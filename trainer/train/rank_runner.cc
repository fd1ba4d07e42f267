// The training loop of one rank (records' order: evaluate at step boundaries, then train).
#include "trainer/train/rank_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "trainer/model/window_schedule.h"
#include "trainer/weights/checkpoint.h"
#include "trainer/weights/weights_file.h"

namespace ablate {
namespace {

using J = nlohmann::json;
J OrNull(const std::optional<double>& v) { return v ? J(*v) : J(nullptr); }

}  // namespace

RankRunner::RankRunner(const RunPlan& plan, Communicator& comm, TokenLoader train, ValLoader val,
                       EventSink* events, const nlohmann::json* start)
    : plan_(plan),
      comm_(comm),
      train_(std::move(train)),
      val_(std::move(val)),
      events_(events),
      start_(start),
      batch_(plan.micro_batch * (plan.model.seq_len + 1)) {}

Status RankRunner::Init() {
  Result<std::unique_ptr<Engine>> engine = MakeEngine(plan_, comm_);
  if (!engine.ok()) return engine.error();
  engine_ = std::move(engine).value();
  ABLATE_RETURN_IF_ERROR(engine_->Init(plan_.seed));
  return Restore();
}

Status RankRunner::Restore() {
  last_checkpoint_ = std::chrono::steady_clock::now();
  if (plan_.resume == nullptr) {
    if (plan_.init_weights != nullptr) return engine_->SetParams(*plan_.init_weights);
    return {};
  }
  const CheckpointMeta& m = plan_.resume->meta;
  ABLATE_RETURN_IF_ERROR(engine_->SetParams(plan_.resume->params));
  ABLATE_RETURN_IF_ERROR(engine_->SetOptimizerState(plan_.resume->optim));
  ABLATE_RETURN_IF_ERROR(train_.Seek({m.data_shard, m.data_base, m.data_started}));
  start_step_ = next_queued_ = next_collected_ = steps_done_ = m.steps_done;
  val_done_at_ = m.val_done_at;
  train_ms_ = m.train_ms;
  final_val_ = m.final_val_loss;
  time_to_target_ms_ = m.time_to_target_ms;
  target_step_ = m.target_step;
  return {};
}

TrainOutcome RankRunner::Run() {
  Status s = Init();
  EmitStart();
  for (int64_t step = start_step_; s.ok(); ++step) {
    bool last = step == plan_.last_step;
    bool val_due = last || (plan_.val_every > 0 && step % plan_.val_every == 0);
    if (step == val_done_at_) val_due = false;  // the resumed checkpoint already has it
    // Validation reads the training time of every step before it.
    if (val_due) s = CollectThrough(step - 1);
    if (!s.ok() || stopping_) break;
    if (val_due) s = Evaluate(step);
    if (!s.ok()) break;
    if (last) {
      // Stopped short of the schedule (--max-steps): a checkpoint to go on from later.
      if (step < plan_.num_iterations && !plan_.checkpoint_dir.empty()) {
        s = WriteCheckpointAt(step, val_due);
      }
      break;
    }
    if (CheckpointDue(step)) s = WriteCheckpointAt(step, val_due);
    if (s.ok() && plan_.save_every > 0 && step > start_step_ && step % plan_.save_every == 0) {
      s = SaveWeightsAt(step);
    }
    if (!s.ok() || stopping_) break;
    s = QueueStep(step);
    if (s.ok()) s = CollectThrough(step - InFlight());
    if (s.ok() && stopping_) s = CollectThrough(step);  // what already ran is reported
    if (stopping_) break;
  }
  // Cancelled (a preemption's SIGTERM): a checkpoint of what ran, so a requeued run goes on.
  if (s.ok() && stopping_ && !plan_.checkpoint_dir.empty() && steps_done_ > start_step_) {
    s = WriteCheckpointAt(steps_done_, false);
  }
  if (s.ok() && engine_ != nullptr) s = engine_->Synchronize();  // a clean end: nothing queued
  if (s.ok() && !plan_.save_path.empty()) s = SaveWeightsAt(steps_done_);
  if (!s.ok() && !agreed_failure_ && !AbortPeers(s.message())) {
    s = Error{plan_.abort->why(), ""};  // another rank failed first: its error is the cause
  }
  // The engine's destructors wait for the device without polling. After a failure, drain with
  // a polled wait; if that fails, or another local rank failed, abort the communicator so that
  // nothing queued waits for a rank that is gone.
  if (!s.ok() && engine_ != nullptr && !engine_->Synchronize().ok()) comm_.Abort();
  if (plan_.abort != nullptr && plan_.abort->raised()) comm_.Abort();
  if (!s.ok() && outcome_.status == TrainStatus::kOk) {
    outcome_ = {TrainStatus::kFailed, s.message()};
  }
  if (outcome_.status != TrainStatus::kOk && outcome_.status != TrainStatus::kCancelled) {
    Emit({{"event", "error"}, {"message", outcome_.message}});
  }
  EmitEnd();
  return outcome_;
}

int RankRunner::InFlight() const {
  return plan_.steps_in_flight >= 0 ? plan_.steps_in_flight : engine_->StepsInFlight();
}

bool RankRunner::AbortPeers(const std::string& why) {
  bool first = true;
  if (plan_.abort != nullptr) {
    std::string where = plan_.backend == Backend::kCuda
                            ? " (GPU " + std::to_string(plan_.DeviceOf(comm_.rank())) + ")"
                            : "";
    first = plan_.abort->Raise("rank " + std::to_string(comm_.rank()) + where + ": " + why);
  }
  comm_.Abort();
  return first;
}

Status RankRunner::Evaluate(int64_t step) {
  std::vector<int64_t> windows = LayerWindowBlocks(plan_.model, step, plan_.num_iterations);
  val_.Reset();
  std::string local_error;  // reported after the all-reduce, so no rank waits
  while (local_error.empty() && val_.NextBatch(batch_.data())) {
    Status s = engine_->Accumulate(batch_.data(), windows, 1, Pass::kEval);
    if (!s.ok()) local_error = s.message();
  }
  Result<float> local = engine_->TakeLoss();
  if (!local.ok() && local_error.empty()) local_error = local.error().message;
  std::vector<float> sum = {local.ok() ? *local : 0.f, local_error.empty() ? 0.f : 1.f};
  Status s = comm_.AllReduce(sum, ReduceOp::kSum);
  if (!s.ok()) return s;
  agreed_failure_ = true;  // whatever fails from here on, every rank sees it the same
  if (sum[1] > 0) {
    return Error{local_error.empty() ? "a peer rank failed during validation" : local_error, ""};
  }
  double loss = double(sum[0]) / double(val_.num_batches());
  if (!std::isfinite(loss)) {
    outcome_ = {TrainStatus::kDiverged,
                "validation loss is not finite at step " + std::to_string(step)};
    return Error{outcome_.message, ""};
  }
  agreed_failure_ = false;
  final_val_ = loss;
  if (!time_to_target_ms_ && loss <= plan_.target_val_loss) {
    time_to_target_ms_ = train_ms_;
    target_step_ = step;
  }
  if (events_ != nullptr) {
    std::fprintf(stderr, "val  step %lld  loss %.4f\n", static_cast<long long>(step), loss);
  }
  Emit({{"event", "val"}, {"step", step}, {"val_loss", loss}, {"train_ms", train_ms_}});
  return {};
}

// A rank that cannot read a batch still runs the step (on zeros), so that every rank queues
// the same collectives; the failure travels in the step's report and ends the run on all ranks.
Status RankRunner::QueueStep(int64_t step) {
  std::vector<int64_t> windows = LayerWindowBlocks(plan_.model, step, plan_.num_iterations);
  ABLATE_RETURN_IF_ERROR(engine_->BeginStep(step));
  ABLATE_RETURN_IF_ERROR(engine_->ZeroGrads());
  int64_t accum = train_.grad_accum_steps();
  bool data_failed = false;
  for (int64_t micro = 0; micro < accum; ++micro) {
    if (!data_failed) {
      Status read = train_.NextBatch(batch_.data());
      if (!read.ok()) {
        data_failed = true;
        data_error_ = read.message();
      }
    }
    if (data_failed) std::fill(batch_.begin(), batch_.end(), 0);
    ABLATE_RETURN_IF_ERROR(engine_->Accumulate(batch_.data(), windows, accum, Pass::kTrain));
  }
  ABLATE_RETURN_IF_ERROR(engine_->Step(step));
  bool stop = plan_.stop != nullptr && plan_.stop->load();
  ABLATE_RETURN_IF_ERROR(engine_->EndStep(step, data_failed, stop, RequestCheckpoint()));
  next_queued_ = step + 1;
  return {};
}

Status RankRunner::CollectThrough(int64_t last) {
  for (; next_collected_ <= last && next_collected_ < next_queued_; ++next_collected_) {
    int64_t step = next_collected_;
    Result<StepReport> report = engine_->CollectStep(step);
    if (!report.ok()) return report.error();
    if (report->data_failed) {
      agreed_failure_ = true;
      return Error{
          data_error_.empty() ? "a peer rank could not read its training data" : data_error_, ""};
    }
    if (!std::isfinite(report->loss)) {
      agreed_failure_ = true;
      outcome_ = {TrainStatus::kDiverged,
                  "train loss is not finite at step " + std::to_string(step)};
      return Error{outcome_.message, ""};
    }
    if (step >= plan_.untimed_steps) train_ms_ += report->step_ms;
    steps_done_ = step + 1;
    EmitStep(step, report->loss, report->step_ms);
    if (report->checkpoint) checkpoint_requested_ = true;
    if (report->stop) {
      stopping_ = true;
      outcome_ = {TrainStatus::kCancelled, "cancelled"};
    }
  }
  return {};
}

bool RankRunner::RequestCheckpoint() {
  if (comm_.rank() != 0 || plan_.checkpoint_every_ms <= 0 || request_sent_) return false;
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                        last_checkpoint_)
                  .count();
  request_sent_ = ms >= plan_.checkpoint_every_ms;
  return request_sent_;
}

bool RankRunner::CheckpointDue(int64_t step) const {
  if (plan_.checkpoint_dir.empty() || step == start_step_) return false;
  if (plan_.checkpoint_every_steps > 0 && step % plan_.checkpoint_every_steps == 0) return true;
  return checkpoint_requested_;
}

// The state after `step` steps. Every rank collects (the Muon momenta are spread over them);
// rank 0 writes. A failed write is reported and training goes on: the run matters more than
// its checkpoint, and the other ranks are already past this point.
Status RankRunner::WriteCheckpointAt(int64_t step, bool val_ran) {
  ABLATE_RETURN_IF_ERROR(CollectThrough(step - 1));
  auto begin = std::chrono::steady_clock::now();
  ablate::Checkpoint c;
  ABLATE_RETURN_IF_ERROR(engine_->GetOptimizerState(c.optim));
  checkpoint_requested_ = false;
  request_sent_ = false;
  last_checkpoint_ = begin;
  if (comm_.rank() != 0) return {};
  ABLATE_RETURN_IF_ERROR(engine_->GetParams(c.params));
  TokenLoader::Position pos = train_.position();
  c.meta = {step, plan_.config_hash, plan_.seed, pos.shard, pos.base, pos.started, train_ms_,
            final_val_, time_to_target_ms_, target_step_, val_ran ? step : int64_t(-1)};
  ParamLayout layout(plan_.model);
  Result<std::string> path = WriteCheckpoint(plan_.checkpoint_dir, c, layout);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin)
                  .count();
  if (!path.ok()) {
    std::fprintf(stderr, "ablate-train: checkpoint at step %lld failed: %s\n",
                 static_cast<long long>(step), path.error().message.c_str());
    Emit({{"event", "checkpoint"}, {"step", step}, {"error", path.error().message}});
    return {};
  }
  std::error_code ec;
  Emit({{"event", "checkpoint"},
        {"step", step},
        {"path", *path},
        {"bytes", int64_t(std::filesystem::file_size(*path, ec))},
        {"write_ms", ms}});
  return {};
}

Status RankRunner::SaveWeightsAt(int64_t step) {
  if (comm_.rank() != 0 || plan_.save_path.empty()) return {};
  ABLATE_RETURN_IF_ERROR(CollectThrough(step - 1));
  std::vector<float> params;
  ABLATE_RETURN_IF_ERROR(engine_->GetParams(params));
  ParamLayout layout(plan_.model);
  ABLATE_RETURN_IF_ERROR(ablate::SaveWeights(
      plan_.save_path, plan_.model, layout, params.data(),
      {{"format", "pt"}, {"ablate.config_hash", plan_.config_hash},
       {"ablate.step", std::to_string(step)}}));
  Emit({{"event", "save"}, {"step", step}, {"path", plan_.save_path}});
  return {};
}

void RankRunner::EmitStep(int64_t step, double loss, double step_ms) {
  if (events_ != nullptr && ((step + 1) % 10 == 0 || step == 0)) {
    if (engine_ != nullptr) (void)engine_->Memory();  // a peak sample at each logging point
    std::fprintf(stderr, "step %lld/%lld  loss %.4f  %.1f ms/step  train %.1f s\n",
                 static_cast<long long>(step + 1), static_cast<long long>(plan_.last_step), loss,
                 step_ms, train_ms_ / 1000);
  }
  Emit({{"event", "step"},
        {"step", step + 1},
        {"train_loss", loss},
        {"lr", plan_.optim.schedule.Multiplier(step)},
        {"momentum", plan_.optim.muon.momentum.At(step)},
        {"step_ms", step_ms},
        {"train_ms", train_ms_},
        {"tokens", (step + 1) * plan_.batch_tokens}});
}

void RankRunner::AddMemory(J& event) {
  std::optional<DeviceMemory> m = engine_ != nullptr ? engine_->Memory() : std::nullopt;
  if (!m) return;
  event["gpu_memory"] = {{"used_bytes", m->used_bytes},
                         {"peak_used_bytes", m->peak_used_bytes},
                         {"total_bytes", m->total_bytes},
                         {"model_bytes", m->model_bytes}};
}

void RankRunner::EmitStart() {
  if (start_ == nullptr || events_ == nullptr) return;
  J start = *start_;
  AddMemory(start);
  Emit(start);
}

void RankRunner::EmitEnd() {
  std::string status = outcome_.status == TrainStatus::kOk          ? "ok"
                       : outcome_.status == TrainStatus::kCancelled ? "cancelled"
                                                                    : "failed";
  J end = {{"event", "end"},
           {"status", status},
           {"final_val_loss", OrNull(final_val_)},
           {"time_to_target_ms", OrNull(time_to_target_ms_)},
           {"target_step", target_step_ ? J(*target_step_) : J(nullptr)},
           {"steps", steps_done_},
           {"train_ms", train_ms_}};
  if (events_ != nullptr) AddMemory(end);
  Emit(end);
}

}  // namespace ablate
