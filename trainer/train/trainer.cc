// Train(): validate everything before any work, emit `start`, run the ranks as threads.
#include "trainer/train/trainer.h"

#include <memory>
#include <thread>

#include "trainer/config/knob_schema.h"
#include "trainer/dist/in_process_communicator.h"
#include "trainer/train/engine.h"
#include "trainer/train/rank_runner.h"

namespace ablate {
namespace {

using J = nlohmann::json;

Result<RunPlan> MakePlan(const J& c, const TrainOptions& o) {
  Result<ModelConfig> model = ModelConfig::FromCanonical(c);
  if (!model.ok()) return model.error();
  Result<OptimConfig> optim = OptimConfig::FromCanonical(c);
  if (!optim.ok()) return optim.error();
  RunPlan p{*model, *optim};
  p.num_iterations = c.at("num_iterations").get<int64_t>();
  p.last_step = o.max_steps >= 0 ? std::min(o.max_steps, p.num_iterations) : p.num_iterations;
  p.val_every = c.at("val_every").get<int64_t>();
  p.untimed_steps = c.at("untimed_steps").get<int64_t>();
  p.batch_tokens = c.at("batch_tokens").get<int64_t>();
  int64_t device = c.at("device_batch_tokens").get<int64_t>();
  p.micro_batch = device / p.model.seq_len;
  p.target_val_loss = c.at("target_val_loss").get<double>();
  p.seed = c.at("seed").get<uint64_t>();
  p.threads_per_rank = std::max(1, o.threads / std::max(1, o.world_size));
  p.backend = o.backend;
  p.device = o.gpus.empty() ? 0 : o.gpus.front();
  p.stop = o.stop;
  if (o.world_size < 1) return Error{"world size must be at least 1", "world_size"};
  if (p.batch_tokens % (device * o.world_size) != 0) {
    return Error{"batch_tokens (" + std::to_string(p.batch_tokens) +
                     ") must be a multiple of device_batch_tokens × world size (" +
                     std::to_string(device) + " × " + std::to_string(o.world_size) + ")",
                 "batch_tokens"};
  }
  return p;
}

struct RankData {
  std::vector<TokenLoader> train;
  std::vector<ValLoader> val;
};

Result<RankData> OpenData(const J& c, const RunPlan& p, const TrainOptions& o) {
  RankData d;
  for (int r = 0; r < o.world_size; ++r) {
    Result<TokenLoader> t = TokenLoader::Open({o.train_files, p.batch_tokens, p.micro_batch,
                                               p.model.seq_len, r, o.world_size,
                                               p.model.embed_vocab_size});
    if (!t.ok()) return t.error();
    Result<ValLoader> v = ValLoader::Open({o.val_files, c.at("val_tokens").get<int64_t>(),
                                           p.micro_batch, p.model.seq_len, r, o.world_size,
                                           p.model.embed_vocab_size});
    if (!v.ok()) return v.error();
    d.train.push_back(std::move(t).value());
    d.val.push_back(std::move(v).value());
  }
  return d;
}

// Backend cuda in this version: one process, one GPU. Returns the GPU's name.
Result<std::string> CheckCuda(const TrainOptions& o) {
  if (o.world_size != 1 || o.gpus.size() != 1) {
    return Error{
        "backend cuda runs on one GPU per run in this version (--world-size 1, one "
        "--gpus index); multi-GPU runs come with NCCL",
        "world_size"};
  }
  return ProbeCudaDevice(o.gpus.front());
}

J StartEvent(const J& c, const RunPlan& p, const TrainOptions& o, int64_t accum,
             const std::string& device) {
  ParamLayout layout(p.model);
  J by_group = J::object();
  for (const ParamInfo& info : layout.params()) {
    std::string g(ParamGroupName(info.group));
    by_group[g] = by_group.value(g, int64_t(0)) + info.numel;
  }
  J start = {{"event", "start"},
             {"config", c},
             {"config_hash", ConfigHash(c)},
             {"backend", p.backend == Backend::kCuda ? "cuda" : "cpu"},
             {"world_size", o.world_size},
             {"threads", p.threads_per_rank * o.world_size},
             {"grad_accum_steps", accum},
             {"micro_batch", p.micro_batch},
             {"seq_len", p.model.seq_len},
             {"params", {{"total", layout.total()}, {"by_group", by_group}}},
             {"param_groups", Optimizer::GroupTable(p.optim, layout)}};
  if (p.backend == Backend::kCuda) start["device"] = device;
  return start;
}

TrainOutcome RunRanks(const RunPlan& plan, RankData data, int world, EventSink& events) {
  InProcessGroup group(world);
  std::vector<TrainOutcome> outcomes(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      InProcessCommunicator comm(&group, r);
      RankRunner runner(plan, comm, std::move(data.train[r]), std::move(data.val[r]),
                        r == 0 ? &events : nullptr);
      outcomes[r] = runner.Run();
    });
  }
  for (std::thread& t : threads) t.join();
  return outcomes[0];
}

}  // namespace

TrainOutcome Train(const J& canonical, const TrainOptions& options, EventSink& events) {
  auto invalid = [&](const std::string& message) {
    events.Emit({{"event", "error"}, {"message", message}});
    return TrainOutcome{TrainStatus::kInvalid, message};
  };
  std::string device;
  if (options.backend == Backend::kCuda) {
    Result<std::string> name = CheckCuda(options);
    if (!name.ok()) return invalid(name.error().message);
    device = *name;
  }
  Result<RunPlan> plan = MakePlan(canonical, options);
  if (!plan.ok()) return invalid(plan.error().message);
  Result<RankData> data = OpenData(canonical, *plan, options);
  if (!data.ok()) return invalid(data.error().message);
  int64_t accum = data->train[0].grad_accum_steps();
  events.Emit(StartEvent(canonical, *plan, options, accum, device));
  return RunRanks(*plan, std::move(data).value(), options.world_size, events);
}

}  // namespace ablate
