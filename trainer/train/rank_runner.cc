// The training loop of one rank (records' order: evaluate at step boundaries, then train).
#include "trainer/train/rank_runner.h"

#include <cmath>
#include <cstdio>

#include "trainer/model/window_schedule.h"

namespace ablate {
namespace {

using J = nlohmann::json;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

J OrNull(const std::optional<double>& v) { return v ? J(*v) : J(nullptr); }

}  // namespace

RankRunner::RankRunner(const RunPlan& plan, Communicator& comm, TokenLoader train, ValLoader val,
                       EventSink* events, const nlohmann::json* start)
    : plan_(plan), comm_(comm), train_(std::move(train)), val_(std::move(val)), events_(events),
      start_(start), batch_(plan.micro_batch * (plan.model.seq_len + 1)) {}

Status RankRunner::Init() {
  Result<std::unique_ptr<Engine>> engine = MakeEngine(plan_, comm_);
  if (!engine.ok()) return engine.error();
  engine_ = std::move(engine).value();
  return engine_->Init(plan_.seed);
}

TrainOutcome RankRunner::Run() {
  Status s = Init();
  EmitStart();
  for (int64_t step = 0; s.ok(); ++step) {
    bool val_due = step == plan_.last_step ||
                   (plan_.val_every > 0 && step % plan_.val_every == 0);
    if (val_due) s = Evaluate(step);
    if (!s.ok() || step == plan_.last_step || ShouldStop()) break;
    s = TrainStep(step);
  }
  if (!s.ok() && outcome_.status == TrainStatus::kOk) {
    outcome_ = {TrainStatus::kFailed, s.message()};
  }
  if (outcome_.status != TrainStatus::kOk && outcome_.status != TrainStatus::kCancelled) {
    Emit({{"event", "error"}, {"message", outcome_.message}});
  }
  EmitEnd();
  return outcome_;
}

bool RankRunner::ShouldStop() {
  float flag = comm_.rank() == 0 && plan_.stop != nullptr && plan_.stop->load() ? 1.f : 0.f;
  std::vector<float> v = {flag};
  if (!comm_.AllReduce(v, ReduceOp::kSum).ok() || v[0] > 0) {
    outcome_ = {TrainStatus::kCancelled, "cancelled"};
    return true;
  }
  return false;
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
  if (sum[1] > 0) {
    return Error{local_error.empty() ? "a peer rank failed during validation" : local_error, ""};
  }
  double loss = double(sum[0]) / double(val_.num_batches());
  if (!std::isfinite(loss)) {
    outcome_ = {TrainStatus::kDiverged, "validation loss is not finite at step " +
                                            std::to_string(step)};
    return Error{outcome_.message, ""};
  }
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

Status RankRunner::TrainStep(int64_t step) {
  Clock::time_point t0 = Clock::now();
  std::vector<int64_t> windows = LayerWindowBlocks(plan_.model, step, plan_.num_iterations);
  Status s = engine_->ZeroGrads();
  if (!s.ok()) return s;
  int64_t accum = train_.grad_accum_steps();
  std::vector<float> stats = {0.f, 0.f};  // mean loss, local failures (data or device)
  std::string local_error;  // a failure still goes through the all-reduce, so no rank waits
  for (int64_t micro = 0; micro < accum && local_error.empty(); ++micro) {
    s = train_.NextBatch(batch_.data());
    if (s.ok()) s = engine_->Accumulate(batch_.data(), windows, accum, Pass::kTrain);
    if (!s.ok()) local_error = s.message();
  }
  Result<float> loss = engine_->TakeLoss();
  if (!loss.ok() && local_error.empty()) local_error = loss.error().message;
  stats[0] = loss.ok() ? *loss : 0.f;
  stats[1] = local_error.empty() ? 0.f : 1.f;
  s = comm_.AllReduce(stats, ReduceOp::kAvg);
  if (!s.ok()) return s;
  if (stats[1] > 0) {
    return Error{local_error.empty() ? "a peer rank failed (data or device)" : local_error, ""};
  }
  if (!std::isfinite(stats[0])) {
    outcome_ = {TrainStatus::kDiverged, "train loss is not finite at step " + std::to_string(step)};
    return Error{outcome_.message, ""};
  }
  s = engine_->Step(step);
  if (s.ok()) s = engine_->Synchronize();  // step_ms is device time, as the speedrun times it
  if (!s.ok()) return s;
  double step_ms = MsSince(t0);
  if (step >= plan_.untimed_steps) train_ms_ += step_ms;
  steps_done_ = step + 1;
  EmitStep(step, stats[0], step_ms);
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
