// The per-op table's rows for the model's edges (op_rows.h): a micro-batch's staging, the
// embedding gathers and their backward, and the chunked head with its loss.
#include <algorithm>
#include <chrono>
#include <limits>
#include <string>

#include "bench/trainer_gpu/op_rows.h"
#include "trainer/cpu/attention.h"
#include "trainer/cuda/embedding.h"
#include "trainer/cuda/gpt.h"
#include "trainer/cuda/head_rows.h"
#include "trainer/cuda/softcap_cross_entropy.h"

namespace ablate::cuda::gpu_bench {
namespace {

// The inputs (B, T) of tokens (B, T + 1).
std::vector<int32_t> Inputs(const std::vector<int32_t>& tokens, int64_t b, int64_t t) {
  std::vector<int32_t> in(static_cast<size_t>(b * t));
  for (int64_t bi = 0; bi < b; ++bi) {
    for (int64_t ti = 0; ti < t; ++ti) in[size_t(bi * t + ti)] = tokens[size_t(bi * (t + 1) + ti)];
  }
  return in;
}

// n ids below `vocab` with p(rank r) ∝ 1 / (r + 2.7), ranks shuffled over the ids: roughly a
// GPT-2 token stream of real text (the commonest id ~4 % of the tokens; the step's ids are
// uniform, ~1.3 per distinct id).
std::vector<int32_t> ZipfIds(int64_t n, int64_t vocab, uint32_t seed) {
  std::vector<double> w(static_cast<size_t>(vocab));
  for (size_t r = 0; r < w.size(); ++r) w[r] = 1.0 / (double(r) + 2.7);
  std::discrete_distribution<int32_t> rank(w.begin(), w.end());
  std::vector<int32_t> id_of(w.size());
  for (size_t r = 0; r < id_of.size(); ++r) id_of[r] = int32_t(r);
  std::mt19937 rng(seed);
  std::shuffle(id_of.begin(), id_of.end(), rng);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int32_t& id : ids) id = id_of[size_t(rank(rng))];
  return ids;
}

// embedding_backward with the plan of `ids` (BuildEmbeddingPlan, packed as Gpt::Stage packs it).
void EmbeddingBackwardRow(CudaContext& ctx, OpTable& table, const std::string& name,
                          const std::vector<int32_t>& ids, float* dtable, const float* dout,
                          int64_t c, PerStep per, int32_t segment_rows = kEmbeddingSegmentRows) {
  int64_t n = int64_t(ids.size());
  EmbeddingPlan plan = BuildEmbeddingPlan(ids.data(), n, segment_rows);
  std::vector<int32_t> packed(static_cast<size_t>(PackedEmbeddingPlanInts(n)));
  int64_t ints = PackEmbeddingPlan(plan, packed.data());
  DeviceBuffer<int32_t> d_plan = Buffer<int32_t>(ints, "plan");
  Check(ctx.ToDevice(d_plan.get(), packed.data(), ints * 4), "plan");
  DeviceEmbeddingPlan dp = DeviceEmbeddingPlanAt(d_plan.get(), plan);
  int64_t partial_rows = EmbeddingPartialRows(n);
  DeviceBuffer<float> partials = Buffer<float>(partial_rows * c, "partial sums");
  int64_t u = int64_t(plan.ids.size());
  // dout's rows, each distinct id's table row read and written, the partial rows written and
  // read, and the plan.
  double bytes = double(n) * double(c) * 4 + double(u) * double(c) * 8 +
                 double(dp.partial_rows) * double(c) * 8 + double(ints) * 4;
  MemRow(
      ctx, table, name + " (" + std::to_string(u) + " ids, " + std::to_string(dp.multi) + " split)",
      bytes, per,
      [&] { return embedding_backward(ctx, dtable, dout, dp, c, partials.get(), partial_rows); });
}

// Where StageOnce puts things in its pinned and device buffers, as Gpt::Stage's StagingLayout.
int64_t StagedLo(int64_t n, int64_t slot) { return 2 * n + PackedEmbeddingPlanInts(n) + slot * n; }

// One Gpt::Stage of `tokens` into pinned `h` and device `d` (both StagedLo(N, distinct windows)
// ints), through the copies' completion.
Status StageOnce(CudaContext& ctx, const StepSetup& s, const std::vector<int32_t>& tokens,
                 const std::vector<int64_t>& distinct, int32_t* h, int32_t* d) {
  int64_t n = s.b * s.t, tp1 = s.t + 1, slots = int64_t(distinct.size());
  for (int64_t bi = 0; bi < s.b; ++bi) {
    for (int64_t ti = 0; ti < s.t; ++ti) {
      h[bi * s.t + ti] = tokens[size_t(bi * tp1 + ti)];
      h[n + bi * s.t + ti] = tokens[size_t(bi * tp1 + ti + 1)];
    }
  }
  ABLATE_RETURN_IF_ERROR(ctx.ToDevice(d, h, 2 * n * 4));
  EmbeddingPlan plan = BuildEmbeddingPlan(h, n);
  int64_t ints = PackEmbeddingPlan(plan, h + 2 * n);
  ABLATE_RETURN_IF_ERROR(ctx.ToDevice(d + 2 * n, h + 2 * n, ints * 4));
  for (int64_t w = 0; w < slots; ++w) {
    int32_t* lo = h + StagedLo(n, w);
    cpu::AttentionMask mask{s.m.doc_masking, s.m.bos_token, distinct[size_t(w)],
                            s.m.window.block_tokens};
    cpu::attention_key_start(lo, tokens.data(), tp1, s.b, s.t, mask);
    ABLATE_RETURN_IF_ERROR(ctx.ToDevice(d + (lo - h), lo, n * 4));
  }
  return ctx.Synchronize();
}

}  // namespace

void BenchEmbedding(CudaContext& ctx, OpTable& table, const StepSetup& s, const LayerCounts& k,
                    const std::vector<int32_t>& tokens) {
  int64_t n = s.b * s.t, c = s.m.model_dim, rows = s.m.embed_vocab_size;
  std::vector<int32_t> inputs = Inputs(tokens, s.b, s.t);
  DeviceBuffer<float> weights = Filled<float>(ctx, rows * c, 51, "table"),
                      dtable = Filled<float>(ctx, rows * c, 52, "dtable"),
                      out = Buffer<float>(n * c, "rows"),
                      dout = Filled<float>(ctx, n * c, 53, "dout");
  DeviceBuffer<int32_t> idx = Buffer<int32_t>(n, "ids");
  Check(ctx.ToDevice(idx.get(), inputs.data(), n * 4), "ids");
  // EmbedForward; each value-embedding layer's rows in ValueMixForward and again in
  // ValueMixBackward.
  MemRow(ctx, table, "embedding fwd (N,C) fp32 gather", double(n) * double(c) * 8 + double(n) * 4,
         {1 + 2 * k.ve},
         [&] { return embedding_forward(ctx, out.get(), weights.get(), idx.get(), n, c); });
  // EmbedBackward and each value-embedding layer's ValueMixBackward.
  EmbeddingBackwardRow(ctx, table, "embedding bwd, the step's ids", inputs, dtable.get(),
                       dout.get(), c, {1 + k.ve});
  std::vector<int32_t> zipf = ZipfIds(n, rows, 54);
  EmbeddingBackwardRow(ctx, table, "embedding bwd, Zipf-like ids", zipf, dtable.get(), dout.get(),
                       c, {1 + k.ve, "text-like ids; the step's are uniform"});
  // The backward as it was before segments (one block column per id, its rows summed by one
  // thread each): NOTES item 11's prediction is this row's ms against the one above.
  EmbeddingBackwardRow(ctx, table, "embedding bwd, Zipf-like ids, unsplit", zipf, dtable.get(),
                       dout.get(), c, {1 + k.ve, "the backward before segments (item 11)"},
                       std::numeric_limits<int32_t>::max());
}

// Gpt::Stage's work for one micro-batch (trainer/cuda/gpt.cc), done the same way: inputs and
// targets split into pinned memory, the embedding-backward plan built on the host, a key-start
// row per distinct window, each copied to the device. The median wall ms until the copies are
// done: in the timed micro-step (PrintPhases) the GPU waits for this before its first kernel;
// in the training loop the host stages the next micro-batch while the GPU runs this one.
void BenchStaging(CudaContext& ctx, OpTable& table, const StepSetup& s,
                  const std::vector<int32_t>& tokens, const std::vector<int64_t>& windows) {
  int64_t n = s.b * s.t;
  std::vector<int64_t> distinct = AttentionWindows(s.m, windows);
  int64_t slots = int64_t(distinct.size());
  PinnedBuffer<int32_t> host;
  Check(host.Allocate(StagedLo(n, slots), "staging"), "staging");
  DeviceBuffer<int32_t> dev = Buffer<int32_t>(StagedLo(n, slots), "staged inputs");
  auto stage = [&] { return StageOnce(ctx, s, tokens, distinct, host.get(), dev.get()); };
  std::vector<double> ms;
  Status st = stage();  // warm-up
  for (int i = 0; i < 5 && st.ok(); ++i) {
    Clock::time_point t0 = Clock::now();
    st = stage();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  Result<double> median = st.ok() ? Result<double>(ms[ms.size() / 2]) : Result<double>(st.error());
  table.TryAdd("staging: host work + H2D (Gpt::Stage)", median, 0, 0, {1});
}

void BenchHead(CudaContext& ctx, OpTable& table, const StepSetup& s) {
  int64_t n = s.b * s.t, c = s.m.model_dim, v = s.m.vocab_size;
  HeadRows plan = PlanHeadRows(n, v);
  // The plan before 2026-12-08 (NOTES item 13): the largest chunk the scratch holds, dW read and
  // written after every chunk. Both run on the same buffers, sized for the larger of each.
  int64_t old_rows = std::min(std::max<int64_t>(64, kHeadScratchBytes / (v * 6) / 64 * 64), n);
  HeadRows per_chunk{old_rows, old_rows};
  int64_t chunks = (n + plan.chunk - 1) / plan.chunk;
  int64_t logit_rows = std::max(plan.chunk, old_rows), dlogit_rows = std::max(plan.group, old_rows);
  DeviceBuffer<bf16> x = Filled<bf16>(ctx, n * c, 31, "x"), w = Filled<bf16>(ctx, v * c, 32, "w"),
                     dlogits = Buffer<bf16>(dlogit_rows * v, "dlogits");
  DeviceBuffer<float> logits = Filled<float>(ctx, logit_rows * v, 33, "logits"),
                      losses = Buffer<float>(n, "l"), dx = Buffer<float>(n * c, "dx"),
                      dw = Filled<float>(ctx, v * c, 34, "dw");
  DeviceBuffer<int32_t> targets = Buffer<int32_t>(n, "targets");
  DeviceBuffer<double> acc = Buffer<double>(1, "loss accumulator");
  std::vector<int32_t> host_targets = Tokens(n, v, 0, 33);
  Check(ctx.ToDevice(targets.get(), host_targets.data(), n * 4), "targets");
  table.TryAdd("classifier (rows, V) fused fwd+bwd",
               TryDeviceMs(ctx, 2, 10,
                           [&] {
                             return softcap_cross_entropy_forward(
                                 ctx, losses.get(), dlogits.get(), logits.get(), targets.get(),
                                 plan.chunk, v, s.m.softcap, 1.f / n);
                           }),
               0, double(plan.chunk) * v * 10, {int(chunks), "inside the whole head's row"});
  // The row-in-registers kernel (NOTES item 15): reads the logits once, 6 bytes per logit.
  table.TryAdd("classifier (rows, V) fused fwd+bwd, row in registers",
               TryDeviceMs(ctx, 2, 10,
                           [&] {
                             return softcap_cross_entropy_forward(
                                 ctx, losses.get(), dlogits.get(), logits.get(), targets.get(),
                                 plan.chunk, v, s.m.softcap, 1.f / n,
                                 ClassifierImpl::kRowInRegisters);
                           }),
               0, double(plan.chunk) * v * 6, {int(chunks), "not the default yet (item 15)"});
  auto head = [&](const char* name, HeadRows rows, PerStep count) {
    LmHeadScratch scratch{logits.get(), dlogits.get(), rows.chunk, rows.group};
    table.TryAdd(name,
                 TryDeviceMs(ctx, 1, 5,
                             [&] {
                               return lm_head_forward_backward(
                                   ctx, losses.get(), dx.get(), dw.get(), x.get(), w.get(),
                                   targets.get(), n, c, v, s.m.softcap, 1.f / n, scratch);
                             }),
                 6.0 * n * c * v, 0, count);
  };
  head("whole head fwd+bwd (N rows; dW per group)", plan, {1});
  head("whole head fwd+bwd, dW per chunk (before)", per_chunk, {1, "before item 13"});
  // HeadForward.
  MemRow(ctx, table, "loss_accumulate (N) fp32", double(n) * 4, {1},
         [&] { return loss_accumulate(ctx, acc.get(), losses.get(), n, 1); });
}

}  // namespace ablate::cuda::gpu_bench
