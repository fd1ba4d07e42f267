// Dispatcher: worker input checked before it is stored. A worker with a valid attempt and
// fencing token is still outside input (a buggy script, a hostile client): what fails
// server/core/worker_input.h's checks is refused for good, and the attempt fails with the reason
// so that a researcher sees why its curve or result is missing instead of a silent gap.
#include <iostream>

#include <nlohmann/json.hpp>

#include "server/dispatch/dispatcher.h"

namespace ablate {
namespace {

// num_iterations of a canonical config; nullopt when it does not say.
std::optional<int64_t> NumIterations(const std::string& config_json) {
  nlohmann::json config = nlohmann::json::parse(config_json, nullptr, false);
  if (!config.is_object()) return std::nullopt;
  auto it = config.find("num_iterations");
  if (it == config.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

double Dispatcher::TargetOf(int64_t run_id) {
  absl::StatusOr<Run> run = store_->GetRun(run_id);
  if (!run.ok()) return kDefaultTargetValLoss;
  absl::StatusOr<std::string> config = RunConfig(*run);
  if (config.ok()) {
    nlohmann::json j = nlohmann::json::parse(*config, nullptr, false);
    if (j.is_object() && j.contains("target_val_loss") && j["target_val_loss"].is_number()) {
      return j["target_val_loss"].get<double>();
    }
  }
  absl::StatusOr<Sweep> sweep = store_->GetSweep(run->sweep_id);
  return sweep.ok() ? sweep->target_val_loss : kDefaultTargetValLoss;
}

std::optional<int64_t> Dispatcher::ConfiguredSteps(const std::string& worker_id,
                                                   int64_t attempt_id, int64_t run_id) {
  if (std::optional<LiveAttempt> share = ShareOf(worker_id, attempt_id);
      share && share->steps_known) {
    return share->configured_steps;
  }
  absl::StatusOr<Run> run = store_->GetRun(run_id);
  if (!run.ok()) return std::nullopt;  // unknown now; asked again with the next batch
  absl::StatusOr<std::string> config = RunConfig(*run);
  if (!config.ok()) return std::nullopt;
  std::optional<int64_t> steps = NumIterations(*config);
  absl::MutexLock lock(&mu_);
  auto w = workers_.find(worker_id);
  if (w != workers_.end()) {
    auto a = w->second.attempts.find(attempt_id);
    if (a != w->second.attempts.end()) {
      a->second.steps_known = true;
      a->second.configured_steps = steps;
    }
  }
  return steps;
}

std::vector<v1::CoordinatorMessage> Dispatcher::RefuseInput(const std::string& worker_id,
                                                            int64_t attempt_id,
                                                            int64_t fencing_token,
                                                            const std::string& what,
                                                            const absl::Status& why,
                                                            v1::CoordinatorMessage ack) {
  const std::string error = what + " of attempt " + std::to_string(attempt_id) + " from worker " +
                            worker_id + " refused: " + std::string(why.message());
  std::cerr << "ablate-coordinator: " << error << std::endl;
  AttemptResult failed;
  failed.state = AttemptState::kFailed;
  failed.error = error;
  // Refused by the store for a stale token: the worker does not hold the attempt, which then
  // stays as it is.
  absl::Status s = store_->FinishAttempt(attempt_id, fencing_token, failed).status();
  if (s.ok()) CancelOtherNodes(attempt_id, worker_id, error);
  // A refused result ends this worker's part; after a refused batch its trainer is still
  // stopping and keeps its GPUs until its RunFinished.
  if (ack.ack().finished()) RetireShare(worker_id, attempt_id, fencing_token);
  feed_->Notify();
  Kick();
  v1::CoordinatorMessage cancel;
  cancel.mutable_cancel()->set_attempt_id(attempt_id);
  cancel.mutable_cancel()->set_grace_ms(options_.cancel_grace_ms);
  cancel.mutable_cancel()->set_reason(error);
  return {std::move(ack), std::move(cancel)};
}

}  // namespace ablate
