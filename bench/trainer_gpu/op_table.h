// The per-op table of trainer_gpu_bench: its rows (name, ms per call, rate, count per micro-step,
// ms × count) printed to stdout as they are measured, the sum of the summed rows, and the layer
// counts that set each op's count per micro-step.
#ifndef ABLATE_BENCH_TRAINER_GPU_OP_TABLE_H_
#define ABLATE_BENCH_TRAINER_GPU_OP_TABLE_H_

#include <functional>
#include <string>

#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/model/model_config.h"

namespace ablate::cuda::gpu_bench {

// How often a row's op runs in one micro-step (forward + backward), and whether its ms × count
// enters the table's sum. A row that is part of another row, or kernels the step does not run,
// still shows its count; `not_summed` says why it stays out of the sum.
struct PerStep {
  int count = 0;
  const char* not_summed = nullptr;  // null: summed
};

// The per-op table: each row printed as soon as it is measured (a run cut at its cap keeps the
// rows it printed), and the sum over the summed rows of ms × count: the micro-step as the table
// accounts for it.
class OpTable {
 public:
  // A row that ran: ms per call, its rate (TFLOP/s when flops > 0, else GB/s when bytes > 0,
  // else none: host work), its count per micro-step and ms × count.
  void Add(const std::string& name, double ms, double flops, double bytes, PerStep per);
  // A row whose run may fail: the figure, or the error in its place. True when it ran.
  bool TryAdd(const std::string& name, const Result<double>& ms, double flops, double bytes,
              PerStep per);
  // A row not run because another failed; counts as failed.
  void NotRun(const std::string& name, const char* why, PerStep per);

  double sum_ms() const { return sum_ms_; }
  int summed_rows() const { return summed_rows_; }
  int failed() const { return failed_; }
  int failed_summed() const { return failed_summed_; }  // failed rows the sum lacks

 private:
  void Failed(PerStep per);

  double sum_ms_ = 0;
  int summed_rows_ = 0, failed_ = 0, failed_summed_ = 0;
};

// The layer counts that set how often each op runs per micro-step, read off trainer/cuda/gpt.cc
// and gpt_backward.cc for the config's knobs (each row in block_rows.cc and edge_rows.cc names
// the call sites of its count; keep them in step with those files).
struct LayerCounts {
  int layers = 0;          // L: every layer has an MLP
  int attention = 0;       // layers with attention
  int ve = 0;              // attention layers that read a value-embedding table
  int ve_mix = 0;          // attention layers whose v is λ-mixed (value_embeds > 0: all)
  int skip_in = 0;         // layers that add a U-Net skip (i >= L/2)
  int skip_out = 0;        // layers whose output is a U-Net skip (i < L/2): the dskip_ buffers
  int shortcut = 0;        // layers with the x0 shortcut mix (embed_shortcut: all)
  int embed_norm = 0;      // 0 or 1
  int qk_norm = 0;         // 0 or 1
  int value_residual = 0;  // 0 or 1
  // Writers of the backward's dx that also write its bf16 copy (trainer/cuda/dx_copy_plan.h).
  int dx_copy_norms = 0;      // the MLP's and attention's norm backwards (+=)
  int dx_copy_shortcuts = 0;  // the shortcut mixes' backwards
  int dx_copy_final = 0;      // the final norm's backward (=): 0 or 1
  int bf16_stream = 0;        // 0 or 1: the stream is stored in bf16 (activation_dtype bf16)

  // A row of the stream's passes on fp32 buffers: summed for an fp32 stream, shown beside the
  // bf16 rows for a bf16 one (NOTES item 14).
  PerStep Fp32Stream(int count) const {
    return bf16_stream ? PerStep{count, "bf16 stream: its bf16 row is summed"} : PerStep{count};
  }
  // The same pass on bf16 buffers: run only for a bf16 stream.
  PerStep Bf16Stream(int count) const { return {bf16_stream ? count : 0}; }
};

// m's counts.
LayerCounts CountLayers(const ModelConfig& m);

// One memory-bound row: `bytes` read + written once per call, the median of 20 runs after 2. Not
// timed when the micro-step never runs the op (count 0: a knob of another preset).
void MemRow(CudaContext& ctx, OpTable& table, const std::string& name, double bytes, PerStep per,
            const std::function<Status()>& fn);

}  // namespace ablate::cuda::gpu_bench

#endif  // ABLATE_BENCH_TRAINER_GPU_OP_TABLE_H_
