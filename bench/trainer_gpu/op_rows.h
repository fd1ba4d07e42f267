// The row groups of trainer_gpu_bench's per-op table (op_bench.h runs them in this order): each
// op one micro-step launches at the preset's shapes, timed on its own, printed as a row of
// `table` with its count per micro-step (from LayerCounts). A row that fails says why on its row
// and the group goes on; a failed allocation or upload ends the bench (bench_common.h's Check).
// Defined in block_rows.cc (the layers' ops), edge_rows.cc (staging, embedding, head) and
// attention_rows.cc.
#ifndef ABLATE_BENCH_TRAINER_GPU_OP_ROWS_H_
#define ABLATE_BENCH_TRAINER_GPU_OP_ROWS_H_

#include <cstdint>
#include <vector>

#include "bench/trainer_gpu/bench_common.h"
#include "bench/trainer_gpu/op_table.h"
#include "trainer/config/attention_impl.h"
#include "trainer/cuda/cuda_context.h"

namespace ablate::cuda::gpu_bench {

// The block products: each forward as the layers run it, then each one's backward (dx and dW in
// one call), and the fc backward with a bf16 dx that earlier tables printed.
void BenchGemms(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k);

// RMSNorm where the model runs it: the block and head norms (N, C) fp32 → bf16, the embedding
// norm fp32 → fp32, qk-norm per head (N·NH, HD) bf16; then their backwards.
void BenchNorms(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k);

// The MLP activation: MlpForward, MlpBackward's recompute, and its backward.
void BenchMlpAct(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k);

// The fp32 residual stream's passes: mixes, copies, zeroing, the bf16 copy of dx, and the mixes'
// backwards.
void BenchStreamOps(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k);

// Between the QKV product and attention, and back: the split, RoPE, the v mixes (value
// embeddings or the value residual), and in the backward RoPE's transpose, the v mixes'
// gradients and the merge into d(qkv). qk-norm is in BenchNorms. The single passes are shown
// out of the sum; the fused forward and backward rows (trainer/cuda/qkv.h) are what the step runs.
void BenchQkvOps(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k);

// Row gathers and their deterministic backward at the model's table (embed_vocab_size, C), for
// `tokens` (B, T + 1).
void BenchEmbedding(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k,
                    const std::vector<int32_t>& tokens);

// Gpt::Stage's work for one micro-batch of `tokens` (B, T + 1) at `windows` (one per layer), as
// a row of wall ms: the host work and its copies to the device.
void BenchStaging(CudaContext& ctx, OpTable& table, const StepSetup& s,
                  const std::vector<int32_t>& tokens, const std::vector<int64_t>& windows);

// The head at the model's chunking (HeadForward), its classifier on one chunk, and the loss sum.
void BenchHead(CudaContext& ctx, OpTable& table, const StepSetup& s);

// Attention's rows: each kernel set (tiled, then mma) at each distinct window of the run, counted
// once per attention layer with that window, only `summed`'s rows in the table's sum; then mma's
// outputs against tiled's, a line each. A kernel set that fails says so on its rows and the table
// goes on; returns the number of comparisons that failed (the rows count their own failures).
int BenchAttention(CudaContext& ctx, OpTable& table, const StepSetup& s,
                   const std::vector<int32_t>& tokens, const std::vector<int64_t>& windows,
                   AttentionImpl summed);

}  // namespace ablate::cuda::gpu_bench

#endif  // ABLATE_BENCH_TRAINER_GPU_OP_ROWS_H_
