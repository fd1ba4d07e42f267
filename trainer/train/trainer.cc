// Train(): validate everything before any work, emit `start`, run the ranks as threads.
#include "trainer/train/trainer.h"

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "trainer/config/knob_schema.h"
#include "trainer/train/communicators.h"
#include "trainer/train/engine.h"
#include "trainer/train/rank_runner.h"
#include "trainer/weights/checkpoint.h"
#include "trainer/weights/weights_file.h"

namespace ablate {
namespace {

using J = nlohmann::json;

// Ranks this process runs: one per GPU of this node, or all of them on the CPU.
int LocalRanks(const TrainOptions& o) {
  return o.backend == Backend::kCuda ? int(o.gpus.size()) : o.world_size;
}

// The options with world_size settled: on the CUDA backend it follows from the nodes and GPUs
// (a --world-size that disagrees is an error). Checks the multi-node options.
Result<TrainOptions> SettleWorld(TrainOptions o) {
  if (o.nnodes < 1 || o.node_rank < 0 || o.node_rank >= o.nnodes) {
    return Error{"node rank " + std::to_string(o.node_rank) + " is not in [0, " +
                     std::to_string(o.nnodes) + ")",
                 "node_rank"};
  }
  if (o.backend == Backend::kCpu) {
    if (o.nnodes > 1) return Error{"several nodes need --backend cuda", "nnodes"};
    return o;
  }
  if (o.gpus.empty()) return Error{"backend cuda needs at least one GPU (--gpus)", "gpus"};
  if (std::set<int>(o.gpus.begin(), o.gpus.end()).size() != o.gpus.size()) {
    return Error{"--gpus names a GPU twice", "gpus"};
  }
  int world = o.nnodes * int(o.gpus.size());
  if (o.world_size != 1 && o.world_size != world) {
    return Error{"--world-size " + std::to_string(o.world_size) + " disagrees with " +
                     std::to_string(o.nnodes) + " node(s) × " + std::to_string(o.gpus.size()) +
                     " GPU(s); on backend cuda leave it out",
                 "world_size"};
  }
  o.world_size = world;
  if (o.nnodes > 1 && o.nccl_id_file.empty() && (o.node_rank == 0 || o.nccl_id.empty())) {
    return Error{o.node_rank == 0
                     ? "node rank 0 of a multi-node run needs --nccl-id-file (it writes the id "
                       "there for the other nodes)"
                     : "node rank " + std::to_string(o.node_rank) +
                           " needs the NCCL id: --nccl-id-file F, or --nccl-id-file - for stdin",
                 "nccl_id_file"};
  }
  return o;
}

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
  p.backend = o.backend;
  if (p.backend == Backend::kCuda) {
    p.devices = o.gpus;
    p.first_rank = o.node_rank * int(o.gpus.size());
  }
  p.threads_per_rank = std::max(1, o.threads / std::max(1, LocalRanks(o)));
  p.stop = o.stop;
  if (o.steps_in_flight < -1 || o.steps_in_flight > 1) {
    return Error{"steps in flight must be 0 or 1 (-1: the backend's own)", "steps_in_flight"};
  }
  p.steps_in_flight = o.steps_in_flight;
  p.attention = o.attention;
  p.config_hash = ConfigHash(c);
  p.save_path = o.save_path;
  p.save_every = o.save_every;
  p.checkpoint_dir = o.checkpoint_dir.empty() ? o.resume_dir : o.checkpoint_dir;
  p.checkpoint_every_steps = o.checkpoint_every_steps;
  p.checkpoint_every_ms = o.checkpoint_every_ms;
  if ((p.checkpoint_every_steps > 0 || p.checkpoint_every_ms > 0) && p.checkpoint_dir.empty()) {
    return Error{"checkpoints need a directory (--checkpoint-dir)", "checkpoint_dir"};
  }
  if (p.save_every > 0 && p.save_path.empty()) {
    return Error{"--save-every needs --save FILE", "save_every"};
  }
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
  int first = p.backend == Backend::kCuda ? p.first_rank : 0;
  for (int r = first; r < first + LocalRanks(o); ++r) {
    Result<TokenLoader> t =
        TokenLoader::Open({o.train_files, p.batch_tokens, p.micro_batch, p.model.seq_len, r,
                           o.world_size, p.model.embed_vocab_size});
    if (!t.ok()) return t.error();
    Result<ValLoader> v =
        ValLoader::Open({o.val_files, c.at("val_tokens").get<int64_t>(), p.micro_batch,
                         p.model.seq_len, r, o.world_size, p.model.embed_vocab_size});
    if (!v.ok()) return v.error();
    d.train.push_back(std::move(t).value());
    d.val.push_back(std::move(v).value());
  }
  return d;
}

// Backend cuda: every GPU of this node usable, and NCCL when there are several ranks. Returns
// the first GPU's name.
Result<std::string> CheckCuda(const TrainOptions& o) {
  std::string name;
  for (int g : o.gpus) {
    Result<std::string> n = ProbeCudaDevice(g);
    if (!n.ok()) return n.error();
    if (name.empty()) name = *n;
  }
  if (o.world_size > 1 || o.nccl_on_one_gpu) {
    Status s = CheckMultiGpu();
    if (!s.ok()) return s.error();
  }
  return name;
}

// --init-from's weights and --resume's checkpoint, read once for every rank. Errors (exit 2):
// a bad weights file naming the tensor, a checkpoint directory of another config.
struct LoadedState {
  std::vector<float> init_weights;
  std::optional<Checkpoint> resume;
};

Result<LoadedState> LoadState(const TrainOptions& o, const RunPlan& p) {
  LoadedState st;
  ParamLayout layout(p.model);
  if (!o.init_from.empty()) {
    st.init_weights.assign(size_t(layout.total()), 0.f);
    Status s = LoadWeightsFile(o.init_from, p.model, layout, st.init_weights.data());
    if (!s.ok()) return Error{"--init-from " + s.message(), s.error().key};
  }
  if (!o.resume_dir.empty()) {
    std::vector<std::string> skipped;
    Result<std::optional<Checkpoint>> c =
        LoadNewestCheckpoint(o.resume_dir, layout, p.config_hash, skipped);
    for (const std::string& why : skipped) {
      std::fprintf(stderr, "ablate-train: skipping unreadable checkpoint %s\n", why.c_str());
    }
    if (!c.ok()) return Error{"--resume: " + c.error().message, "resume"};
    st.resume = *c;
    if (!st.resume) {
      std::fprintf(stderr, "ablate-train: no checkpoint in %s; starting at step 0\n",
                   o.resume_dir.c_str());
    }
  }
  return st;
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
             {"param_groups", Optimizer::GroupTable(p.optim, layout)},
             {"init_from", o.init_from.empty() ? J(nullptr) : J(o.init_from)},
             {"resumed_from", J(nullptr)}};
  if (p.resume != nullptr) {
    start["resumed_from"] = {{"step", p.resume->meta.steps_done},
                             {"path", p.resume->path},
                             {"train_ms", p.resume->meta.train_ms}};
  }
  if (p.backend == Backend::kCuda) {
    start["device"] = device;
    start["gpus"] = o.gpus;
    start["nnodes"] = o.nnodes;
    start["node_rank"] = o.node_rank;
  }
  return start;
}

// One thread per local rank. The first local rank emits the events (and `start` once its engine
// is ready, so start can report the device memory).
TrainOutcome RunRanks(const RunPlan& plan, RankData data, Communicators& comms, const J& start,
                      EventSink& events) {
  int local = int(data.train.size());
  std::vector<TrainOutcome> outcomes(static_cast<size_t>(local));
  std::vector<std::thread> threads;
  for (int j = 0; j < local; ++j) {
    threads.emplace_back([&, j] {
      RankRunner runner(plan, comms.at(j), std::move(data.train[j]), std::move(data.val[j]),
                        j == 0 ? &events : nullptr, j == 0 ? &start : nullptr);
      outcomes[j] = runner.Run();
    });
  }
  for (std::thread& t : threads) t.join();
  return outcomes[0];
}

}  // namespace

TrainOutcome Train(const J& canonical, const TrainOptions& requested, EventSink& events) {
  auto invalid = [&](const std::string& message) {
    events.Emit({{"event", "error"}, {"message", message}});
    return TrainOutcome{TrainStatus::kInvalid, message};
  };
  Result<TrainOptions> settled = SettleWorld(requested);
  if (!settled.ok()) return invalid(settled.error().message);
  const TrainOptions& options = *settled;
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
  Result<LoadedState> state = LoadState(options, *plan);
  if (!state.ok()) return invalid(state.error().message);
  if (!options.init_from.empty()) plan.value().init_weights = &state->init_weights;
  if (state->resume) plan.value().resume = &*state->resume;
  AbortSignal abort;  // outlives the communicators and the ranks
  plan.value().abort = &abort;
  Result<std::unique_ptr<Communicators>> comms = MakeCommunicators(options, *plan);
  if (!comms.ok()) return invalid(comms.error().message);
  int64_t accum = data->train[0].grad_accum_steps();
  J start = StartEvent(canonical, *plan, options, accum, device);
  return RunRanks(*plan, std::move(data).value(), **comms, start, events);
}

}  // namespace ablate
