// ablate-train: trains one GPT run and streams JSON-lines events on stdout (DESIGN §6.1).
// Human logs go to stderr. Exit codes are in kHelpFooter.
#include <CLI/CLI.hpp>
#include <atomic>
#include <csignal>
#include <iostream>
#include <thread>
#include <vector>

#include "common/cli_path_flag.h"
#include "common/spec/duration.h"
#include "trainer/config/knob_schema.h"
#include "trainer/cpu/blas_setup.h"
#include "trainer/data/shard_reader.h"
#include "trainer/collectives/nccl_id.h"
#include "trainer/tools/gpu_list.h"
#include "trainer/tools/library_report.h"
#include "trainer/tools/run_config_builder.h"
#include "trainer/train/trainer.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitInvalid = 2;
constexpr int kExitDiverged = 3;

constexpr const char* kHelpFooter = R"(
Config: start from --preset at --scale (or the schema defaults), then --config, then each
--set, in that order. Knob names and ranges: `ablate presets` / trainer/config/knob_table.cc.

Events (stdout, one JSON object per line): start, step, val, end, error.
  step.step and val.step count completed steps; step.lr is the schedule's multiplier of every
  group's base lr; train_ms excludes validation and the first untimed_steps steps.

Exit codes:
  0  finished (end.status ok), or cancelled by SIGTERM/SIGINT at a step boundary
     (end.status cancelled)
  1  failed during training (error event, end.status failed)
  2  invalid arguments, knobs or data, rejected before any work (error event)
  3  the loss became NaN or infinite (error event, end.status failed)

Weights and checkpoints: --save/--init-from use safetensors with the tensor names of the
records' PyTorch models (trainer/README.md shows the few lines of Python to go either way); a
bad file (missing, extra, misshapen or mistyped tensor, truncated) exits 2 naming the tensor.
--checkpoint-dir D --checkpoint-every 10m writes D/ckpt-<step>.safetensors atomically;
--resume D continues from the newest readable one exactly where it stopped (same losses on the
CPU, bit for bit).

GPUs (--backend cuda): one rank per GPU of --gpus, one process per node. The global batch
(batch_tokens) and the validation set are the same whatever the number of GPUs; gradient
accumulation makes up the difference. Several nodes: start one ablate-train per node with the
same --gpus count, --nnodes N and its --node-rank; node 0 writes the NCCL id to --nccl-id-file,
the others read it from that file (a shared file system; they wait for it) or from stdin
(--nccl-id-file -). The worker does this hand-over through the coordinator.

Examples:
  ablate-train --preset r9-shortcuts --scale tiny --set logit_softcap=15 \
      --train 'data/train_*.bin' --val 'data/val_*.bin'
  ablate-train --preset r20-sub3min --backend cuda --gpus 0-7 --train ... --val ...
)";

#if ABLATE_HAVE_CUDA
constexpr const char* kBackends = "cpu, cuda";
#else
constexpr const char* kBackends = "cpu";
#endif

std::atomic<bool> g_stop{false};  // set by SIGTERM/SIGINT; read at step boundaries

void OnSignal(int) { g_stop.store(true); }

struct Args {
  ablate::RunConfigSources sources;
  std::string train, val, backend = "cpu";
  std::string gpus = "0";
  int nnodes = 1;
  int node_rank = 0;
  std::string nccl_id_file;
  int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  int world_size = 1;
  int64_t max_steps = -1;
  std::string init_from, save;
  int64_t save_every = 0;
  std::string checkpoint_dir, checkpoint_every, resume;
};

// --checkpoint-every: "500steps", or wall time "30s", "10m", "1h" (common/spec/duration.h: the
// grammar of sweep specs too; a unit is required). "" on success, else what is wrong.
std::string ParseCheckpointEvery(const std::string& text, ablate::TrainOptions& o) {
  if (text.empty()) return "";
  std::string error;
  std::optional<ablate::Period> p =
      ablate::ParsePeriod(text, ablate::PeriodUnits::kTimeOrSteps, &error);
  if (!p) return error;
  if (p->steps.value_or(0) <= 0 && p->ms.value_or(0) <= 0) return "'" + text + "' is not positive";
  if (p->steps) o.checkpoint_every_steps = *p->steps;
  if (p->ms) o.checkpoint_every_ms = double(*p->ms);
  return "";
}

void AddOptions(CLI::App& app, Args& a) {
  app.add_option("--config", a.sources.config_file, "JSON file of knobs (flat or nested)")
      ->transform(ablate::PathFlag());
  app.add_option("--preset", a.sources.preset,
                 "record recipe: r8-untied, r9-shortcuts, r11-unet, r18-softcap15, r20-sub3min");
  app.add_option("--scale", a.sources.scale, "full, small or tiny")->default_val("full");
  app.add_option("--set", a.sources.sets, "override one knob: --set muon.lr=0.05 (repeatable)");
  app.add_option("--train", a.train, "glob of training shards")
      ->transform(ablate::PathFlag())
      ->required();
  app.add_option("--val", a.val, "glob of validation shards")
      ->transform(ablate::PathFlag())
      ->required();
  app.add_option("--backend", a.backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--gpus", a.gpus,
                 "--backend cuda: GPUs of this node, one rank each, as CUDA numbers them under "
                 "CUDA_VISIBLE_DEVICES: 0-7, 0,2,4 (default 0)");
  app.add_option("--nnodes", a.nnodes, "--backend cuda: nodes of the run (one process each)")
      ->check(CLI::Range(1, 1024));
  app.add_option("--node-rank", a.node_rank, "--backend cuda: this node's rank in [0, nnodes)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--nccl-id-file", a.nccl_id_file,
                 "several nodes: node 0 writes the NCCL id here; the others read it (waiting for "
                 "it to appear), or from stdin with -")->transform(ablate::PathFlag());
  app.add_option("--threads", a.threads, "CPU threads in total (split across ranks)")
      ->check(CLI::PositiveNumber);
  app.add_option("--world-size", a.world_size,
                 "ranks, run as threads on the CPU (on cuda: nnodes × GPUs, computed)")
      ->check(CLI::Range(1, 64));
  app.add_option("--max-steps", a.max_steps,
                 "stop after N steps without changing the schedule (then validate)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--init-from", a.init_from,
                 "start from these weights (safetensors, the record's tensor names) instead of "
                 "the seed's initialisation")->transform(ablate::PathFlag());
  app.add_option("--save", a.save, "write the final weights here (safetensors, record names)")
      ->transform(ablate::PathFlag());
  app.add_option("--save-every", a.save_every, "also overwrite --save every N steps")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--checkpoint-dir", a.checkpoint_dir,
                 "write checkpoints (weights, optimizer, data position, timing) here")
      ->transform(ablate::PathFlag());
  app.add_option("--checkpoint-every", a.checkpoint_every,
                 "checkpoint every 500steps, or every 30s / 10m / 1h of wall time (a unit is "
                 "required)");
  app.add_option("--resume", a.resume,
                 "continue from the newest readable checkpoint in DIR (none: start at step 0); "
                 "checkpoints go on into DIR unless --checkpoint-dir says otherwise")
      ->transform(ablate::PathFlag());
  app.footer(kHelpFooter);
}

int Fail(ablate::EventSink& events, int code, const std::string& message) {
  events.Emit({{"event", "error"}, {"message", message}});
  std::cerr << "ablate-train: " << message << "\n";
  return code;
}

int ExitCode(ablate::TrainStatus s) {
  switch (s) {
    case ablate::TrainStatus::kOk:
    case ablate::TrainStatus::kCancelled: return kExitOk;
    case ablate::TrainStatus::kInvalid: return kExitInvalid;
    case ablate::TrainStatus::kFailed: return kExitFailed;
    case ablate::TrainStatus::kDiverged: return kExitDiverged;
  }
  return kExitFailed;
}

int Run(const Args& a) {
  ablate::JsonLinesSink events(&std::cout);
  ablate::Result<nlohmann::json> config = ablate::BuildRunConfig(a.sources);
  if (!config.ok()) return Fail(events, kExitInvalid, config.error().message);
  auto train = ablate::ExpandShardPattern(a.train);
  if (!train.ok()) return Fail(events, kExitInvalid, train.error().message);
  auto val = ablate::ExpandShardPattern(a.val);
  if (!val.ok()) return Fail(events, kExitInvalid, val.error().message);
  auto gpus = ablate::ParseGpuList(a.gpus);
  if (!gpus.ok()) return Fail(events, kExitInvalid, gpus.error().message);
  ablate::TrainOptions o{*train, *val,
                         a.backend == "cuda" ? ablate::Backend::kCuda : ablate::Backend::kCpu,
                         a.world_size, a.threads, a.max_steps, &g_stop, *gpus};
  o.init_from = a.init_from;
  o.save_path = a.save;
  o.save_every = a.save_every;
  o.checkpoint_dir = a.checkpoint_dir;
  o.resume_dir = a.resume;
  if (std::string bad = ParseCheckpointEvery(a.checkpoint_every, o); !bad.empty()) {
    return Fail(events, kExitInvalid, "--checkpoint-every: " + bad);
  }
  o.nnodes = a.nnodes;
  o.node_rank = a.node_rank;
  o.nccl_id_file = a.nccl_id_file;
  if (a.nccl_id_file == "-") {
    if (a.node_rank == 0) {
      return Fail(events, kExitInvalid, "--nccl-id-file -: node rank 0 writes the id, to a file");
    }
    std::string line;
    std::getline(std::cin, line);
    auto id = ablate::DecodeNcclId(line);
    if (!id.ok()) return Fail(events, kExitInvalid, "NCCL id on stdin: " + id.error().message);
    o.nccl_id = *id;
  }
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  ablate::TrainOutcome out = ablate::Train(*config, o, events);
  if (out.status != ablate::TrainStatus::kOk) std::cerr << "ablate-train: " << out.message << "\n";
  return ExitCode(out.status);
}

}  // namespace

int main(int argc, char** argv) {
  ablate::cpu::TuneCpuRuntime(argv);
  CLI::App app{"ablate-train: train a GPT with the NanoGPT speedrun's techniques"};
  Args args;
  AddOptions(app, args);
  app.set_version_flag("--version", "ablate-train " ABLATE_VERSION " (knob schema " +
                                        ablate::KnobSchemaFingerprint() + ", backends: " +
                                        kBackends + ")");
  app.add_flag_callback(
         "--libraries",
         [] {
           std::cout << ablate::LibraryReportJson() << std::endl;
           throw CLI::Success();
         },
         "print, as one JSON line, the CUDA version this binary was built with, the driver's, and "
         "where cuBLASLt and NCCL load from (or why not), then exit: what `ablate-worker --check` "
         "asks")
      ->trigger_on_parse();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitInvalid;
  }
  return Run(args);
}
