// The per-op table's rows and counts (op_table.h).
#include "bench/trainer_gpu/op_table.h"

#include <cstdio>

#include "bench/trainer_gpu/bench_common.h"
#include "trainer/cuda/dx_copy_plan.h"

namespace ablate::cuda::gpu_bench {
namespace {

// `name` padded with spaces to `width` characters (UTF-8: ·, ², → are one character each).
std::string Padded(const std::string& name, size_t width) {
  size_t chars = 0;
  for (char ch : name) chars += (static_cast<unsigned char>(ch) & 0xC0) != 0x80 ? 1 : 0;
  return name + std::string(chars < width ? width - chars : 0, ' ');
}

}  // namespace

void OpTable::Add(const std::string& name, double ms, double flops, double bytes, PerStep per) {
  char rate[32] = "               ";
  if (flops > 0) {
    std::snprintf(rate, sizeof rate, "%7.1f TFLOP/s", flops / (ms * 1e9));
  } else if (bytes > 0) {
    std::snprintf(rate, sizeof rate, "%7.1f GB/s   ", bytes / (ms * 1e6));
  }
  double total = ms * per.count;
  if (per.not_summed != nullptr) {
    std::printf("  %s %9.3f ms  %s  x%-3d (%.3f ms, not summed: %s)\n", Padded(name, 48).c_str(),
                ms, rate, per.count, total, per.not_summed);
    return;
  }
  std::printf("  %s %9.3f ms  %s  x%-3d %9.3f ms\n", Padded(name, 48).c_str(), ms, rate, per.count,
              total);
  sum_ms_ += total;
  ++summed_rows_;
}

bool OpTable::TryAdd(const std::string& name, const Result<double>& ms, double flops, double bytes,
                     PerStep per) {
  if (ms.ok()) {
    Add(name, *ms, flops, bytes, per);
    return true;
  }
  std::printf("  %s FAILED: %s\n", Padded(name, 48).c_str(), ms.error().message.c_str());
  Failed(per);
  return false;
}

void OpTable::NotRun(const std::string& name, const char* why, PerStep per) {
  std::printf("  %s not run: %s\n", Padded(name, 48).c_str(), why);
  Failed(per);
}

void OpTable::Failed(PerStep per) {
  ++failed_;
  if (per.not_summed == nullptr && per.count > 0) ++failed_summed_;
}

LayerCounts CountLayers(const ModelConfig& m) {
  LayerCounts k;
  k.layers = int(m.n_layer);
  for (int64_t i = 0; i < m.n_layer; ++i) {
    if (!m.HasAttention(i)) continue;
    ++k.attention;
    if (m.ValueEmbedTable(i) >= 0) ++k.ve;
  }
  k.ve_mix = m.value_embeds > 0 ? k.attention : 0;
  if (m.unet_skips) {
    k.skip_in = int(m.n_layer - m.n_layer / 2);
    k.skip_out = int(m.n_layer / 2);
  }
  k.shortcut = m.embed_shortcut ? k.layers : 0;
  k.embed_norm = m.embed_norm ? 1 : 0;
  k.qk_norm = m.qk_norm ? 1 : 0;
  k.value_residual = m.value_residual ? 1 : 0;
  DxCopyPlan dx = PlanDxCopies(m);
  for (int64_t i = 0; i < m.n_layer; ++i) {
    k.dx_copy_norms += int(dx.mlp_norm[size_t(i)]) + int(dx.attention_norm[size_t(i)]);
    k.dx_copy_shortcuts += int(dx.shortcut[size_t(i)]);
  }
  k.dx_copy_final = dx.final_norm ? 1 : 0;
  k.bf16_stream = m.Bf16Stream() ? 1 : 0;
  return k;
}

void MemRow(CudaContext& ctx, OpTable& table, const std::string& name, double bytes, PerStep per,
            const std::function<Status()>& fn) {
  if (per.count == 0) return;
  table.TryAdd(name, TryDeviceMs(ctx, 2, 20, fn), 0, bytes, per);
}

}  // namespace ablate::cuda::gpu_bench
