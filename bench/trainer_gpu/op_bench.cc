// The per-op half of trainer_gpu_bench (op_bench.h): runs op_rows.h's row groups in order and
// prints the table's sum.
#include "bench/trainer_gpu/op_bench.h"

#include <cstdio>
#include <string>
#include <vector>

#include "bench/trainer_gpu/op_rows.h"
#include "bench/trainer_gpu/op_table.h"
#include "trainer/cuda/gpt.h"
#include "trainer/cuda/head_rows.h"
#include "trainer/model/window_schedule.h"

namespace ablate::cuda::gpu_bench {
namespace {

// The micro-step as the table accounts for it, against the forward+backward measured in this
// run (PrintPhases) when the step ran.
void PrintSum(const OpTable& table, std::optional<double> measured, AttentionImpl step_attention,
              AttentionImpl summed) {
  std::string attention =
      std::string("attention as the ") + AttentionImplName(summed) + " kernels" +
      (step_attention == AttentionImpl::kAuto ? ", kAuto's choice at head_dim 64 and 128"
                                              : ", the step's --attention");
  std::printf("micro-step from the table: %.1f ms = sum of ms x count over %d rows (%s)",
              table.sum_ms(), table.summed_rows(), attention.c_str());
  if (table.failed_summed() > 0) {
    std::printf("; %d counted row(s) FAILED and are missing from it", table.failed_summed());
  }
  if (measured) {
    double rest = *measured - table.sum_ms();
    std::printf(
        "; measured forward+backward in this run %.1f ms: %.1f ms (%.1f %%) not accounted "
        "for\n",
        *measured, rest, 100 * rest / *measured);
  } else {
    std::printf("; the step was skipped (--skip-step): no measured forward+backward in this run\n");
  }
}

}  // namespace

// Attention comes last: a kernel that faults poisons the context, and the rows before it still
// stand.
int BenchOps(CudaContext& ctx, const Options& o, std::optional<double> measured) {
  StepSetup s = Setup(o);
  int64_t n = s.b * s.t;
  LayerCounts k = CountLayers(s.m);
  std::printf(
      "per-op, N=%lld tokens, C=%lld, F=%lld, V=%lld, %lld heads of %lld, head chunks of %lld "
      "rows in groups of %lld; each row: ms per call, rate, calls per micro-step (forward + "
      "backward), ms x calls:\n",
      (long long)n, (long long)s.m.model_dim, (long long)s.m.hidden_dim(),
      (long long)s.m.vocab_size, (long long)s.m.n_head, (long long)s.m.head_dim,
      (long long)PlanHeadRows(n, s.m.vocab_size).chunk,
      (long long)PlanHeadRows(n, s.m.vocab_size).group);
  std::vector<int32_t> tokens = Tokens(s.b * (s.t + 1), s.m.embed_vocab_size, s.m.bos_token, 41);
  std::vector<int64_t> windows = LayerWindowBlocks(s.m, s.iters / 2, s.iters);
  OpTable table;
  BenchGemms(ctx, table, s, k);
  BenchNorms(ctx, table, s, k);
  BenchMlpAct(ctx, table, s, k);
  BenchStreamOps(ctx, table, s, k);
  BenchQkvOps(ctx, table, s, k);
  BenchEmbedding(ctx, table, s, k, tokens);
  BenchStaging(ctx, table, s, tokens, windows);
  BenchHead(ctx, table, s);
  std::printf("  sum so far, every row but attention: %.1f ms over %d rows\n", table.sum_ms(),
              table.summed_rows());
  // kAuto runs the tiled kernels at head_dim 64 and 128 (Choose in trainer/cuda/attention.cu).
  AttentionImpl summed =
      o.attention == AttentionImpl::kMma ? AttentionImpl::kMma : AttentionImpl::kTiled;
  int failed = BenchAttention(ctx, table, s, tokens, windows, summed);
  PrintSum(table, measured, o.attention, summed);
  return table.failed() + failed;
}

}  // namespace ablate::cuda::gpu_bench
