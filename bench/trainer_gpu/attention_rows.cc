// The per-op table's attention rows (op_rows.h): both kernel sets, tiled and mma, at each distinct
// window of the run, and mma's outputs compared against tiled's on the same inputs.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/trainer_gpu/op_rows.h"
#include "trainer/cpu/attention.h"
#include "trainer/cuda/attention.h"

namespace ablate::cuda::gpu_bench {
namespace {

// Attention's operands at the preset's shape: the inputs both kernel sets read, and the lo of the
// window being timed.
struct AttentionInputs {
  int64_t b = 0, t = 0, nh = 0, hd = 0;
  float scale = 0;
  DeviceBuffer<bf16> q, k, v, dout;  // (N, C)
  DeviceBuffer<float> rows;          // (B, NH, T) the backward's scratch
  DeviceBuffer<int32_t> lo;          // (B, T)
};

// What one kernel set wrote.
struct AttentionOutputs {
  DeviceBuffer<bf16> out;               // (N, C)
  DeviceBuffer<float> lse, dq, dk, dv;  // (B, NH, T), (N, C) each
};

AttentionOutputs MakeOutputs(int64_t n, int64_t c, int64_t nh, const char* impl) {
  std::string what = std::string(impl) + " attention output";
  return {Buffer<bf16>(n * c, what.c_str()), Buffer<float>(n * nh, what.c_str()),
          Buffer<float>(n * c, what.c_str()), Buffer<float>(n * c, what.c_str()),
          Buffer<float>(n * c, what.c_str())};
}

Status Forward(CudaContext& ctx, AttentionInputs& in, AttentionOutputs& o, AttentionImpl impl) {
  return attention_forward(ctx, o.out.get(), o.lse.get(), in.q.get(), in.k.get(), in.v.get(),
                           in.lo.get(), in.b, in.t, in.nh, in.hd, in.scale, impl);
}

// The backward of the forward whose out and lse `fwd` holds, gradients into `o`.
Status Backward(CudaContext& ctx, AttentionInputs& in, const AttentionOutputs& fwd,
                AttentionOutputs& o, AttentionImpl impl) {
  return attention_backward(ctx, o.dq.get(), o.dk.get(), o.dv.get(), in.dout.get(), in.q.get(),
                            in.k.get(), in.v.get(), fwd.out.get(), fwd.lse.get(), in.lo.get(),
                            in.rows.get(), in.b, in.t, in.nh, in.hd, in.scale, impl);
}

// Uploads lo (B, T) for `window` blocks under the run's masks; returns the number of (query, key)
// pairs it leaves visible.
double UploadWindow(CudaContext& ctx, const StepSetup& s, const std::vector<int32_t>& tokens,
                    int64_t window, AttentionInputs& in) {
  int64_t n = s.b * s.t;
  std::vector<int32_t> host_lo(static_cast<size_t>(n));
  cpu::AttentionMask mask{s.m.doc_masking, s.m.bos_token, window, s.m.window.block_tokens};
  cpu::attention_key_start(host_lo.data(), tokens.data(), s.t + 1, s.b, s.t, mask);
  Check(ctx.ToDevice(in.lo.get(), host_lo.data(), n * 4), "lo");
  double keys = 0;
  for (int64_t r = 0; r < n; ++r) keys += double(r % s.t - host_lo[r] + 1);
  return keys;
}

// Times one kernel set's forward and backward at the uploaded window, a row each, `per` being
// their count per micro-step. True when both ran.
bool TimeAttention(CudaContext& ctx, OpTable& table, AttentionInputs& in, AttentionOutputs& o,
                   AttentionImpl impl, int64_t window, double keys, PerStep per) {
  double fwd_flops = 4.0 * keys * double(in.hd * in.nh);
  std::string tail =
      std::string(" ") + AttentionImplName(impl) + ", window " + std::to_string(window) + " blocks";
  bool fwd_ok = table.TryAdd("attention fwd" + tail,
                             TryDeviceMs(ctx, 2, 10, [&] { return Forward(ctx, in, o, impl); }),
                             fwd_flops, 0, per);
  if (!fwd_ok) {
    table.NotRun("attention bwd" + tail, "the forward failed", per);
    return false;
  }
  return table.TryAdd("attention bwd" + tail,
                      TryDeviceMs(ctx, 2, 10, [&] { return Backward(ctx, in, o, o, impl); }),
                      2.0 * fwd_flops, 0, per);
}

template <class T>
std::vector<float> HostFloats(CudaContext& ctx, const DeviceBuffer<T>& d) {
  std::vector<T> tmp(size_t(d.size()));
  Check(ctx.ToHost(tmp.data(), d.get(), d.bytes()), "download");
  std::vector<float> out(tmp.size());
  for (size_t i = 0; i < tmp.size(); ++i) out[i] = float(tmp[i]);
  return out;
}

// "name max|got − want| (max|want|)" for one tensor; NaN or inf in `got` shows as inf.
template <class T>
std::string Difference(CudaContext& ctx, const char* name, const DeviceBuffer<T>& got,
                       const DeviceBuffer<T>& want) {
  std::vector<float> g = HostFloats(ctx, got), w = HostFloats(ctx, want);
  double diff = 0, ref = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double d = std::isfinite(g[i]) ? std::abs(double(g[i]) - w[i]) : INFINITY;
    diff = std::max(diff, d);
    ref = std::max(ref, std::abs(double(w[i])));
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "  %s %.3g (%.3g)", name, diff, ref);
  return buf;
}

// kMma against kTiled at the uploaded window, once: both forwards on the same inputs, then both
// backwards from kTiled's out and lse (so the gradients compare the backward kernels alone).
Status CompareAttention(CudaContext& ctx, AttentionInputs& in, AttentionOutputs& tiled,
                        AttentionOutputs& mma, int64_t window) {
  ABLATE_RETURN_IF_ERROR(Forward(ctx, in, tiled, AttentionImpl::kTiled));
  ABLATE_RETURN_IF_ERROR(Forward(ctx, in, mma, AttentionImpl::kMma));
  ABLATE_RETURN_IF_ERROR(Backward(ctx, in, tiled, tiled, AttentionImpl::kTiled));
  ABLATE_RETURN_IF_ERROR(Backward(ctx, in, tiled, mma, AttentionImpl::kMma));
  ABLATE_RETURN_IF_ERROR(ctx.Synchronize());
  std::string line =
      Difference(ctx, "out", mma.out, tiled.out) + Difference(ctx, "lse", mma.lse, tiled.lse) +
      Difference(ctx, "dq", mma.dq, tiled.dq) + Difference(ctx, "dk", mma.dk, tiled.dk) +
      Difference(ctx, "dv", mma.dv, tiled.dv);
  std::printf("  mma vs tiled, window %lld blocks, max |mma - tiled| (max |tiled|):%s\n",
              (long long)window, line.c_str());
  return {};
}

AttentionInputs MakeInputs(CudaContext& ctx, const StepSetup& s) {
  int64_t n = s.b * s.t, c = s.m.model_dim, nh = s.m.n_head;
  AttentionInputs in;
  in.b = s.b;
  in.t = s.t;
  in.nh = nh;
  in.hd = s.m.head_dim;
  in.scale = float(s.m.AttentionScale());
  in.q = Buffer<bf16>(n * c, "q");
  in.k = Buffer<bf16>(n * c, "k");
  in.v = Buffer<bf16>(n * c, "v");
  in.dout = Buffer<bf16>(n * c, "dout");
  in.rows = Buffer<float>(n * nh, "rows");
  in.lo = Buffer<int32_t>(n, "lo");
  uint32_t seed = 11;  // distinct inputs: q = k would make every query's own key dominate
  for (auto* b : {&in.q, &in.k, &in.v, &in.dout}) FillRandom(ctx, *b, seed++);
  return in;
}

// BenchAttention's state: the inputs and both kernel sets' outputs at the preset's shape, for the
// distinct windows of one run. Borrows ctx, s, tokens and windows for its lifetime.
class AttentionBench {
 public:
  AttentionBench(CudaContext& ctx, const StepSetup& s, const std::vector<int32_t>& tokens,
                 const std::vector<int64_t>& windows)
      : ctx_(ctx),
        s_(s),
        tokens_(tokens),
        windows_(windows),
        in_(MakeInputs(ctx, s)),
        tiled_(MakeOutputs(s.b * s.t, s.m.model_dim, s.m.n_head, "tiled")),
        mma_(MakeOutputs(s.b * s.t, s.m.model_dim, s.m.n_head, "mma")),
        distinct_(AttentionWindows(s.m, windows)) {}

  // Times each kernel set (tiled, then mma) at each distinct window; returns, per window, whether
  // mma's rows ran.
  std::vector<bool> TimeKernelSets(OpTable& table, AttentionImpl summed) {
    const char* why =
        summed == AttentionImpl::kMma ? "the sum counts mma's" : "the sum counts tiled's";
    std::vector<bool> mma_ok(distinct_.size(), false);
    for (AttentionImpl impl : {AttentionImpl::kTiled, AttentionImpl::kMma}) {
      for (size_t i = 0; i < distinct_.size(); ++i) {
        double keys = UploadWindow(ctx_, s_, tokens_, distinct_[i], in_);
        AttentionOutputs& o = impl == AttentionImpl::kMma ? mma_ : tiled_;
        bool ok = TimeAttention(ctx_, table, in_, o, impl, distinct_[i], keys,
                                {LayersAt(distinct_[i]), impl == summed ? nullptr : why});
        if (impl == AttentionImpl::kMma) mma_ok[i] = ok;
      }
    }
    return mma_ok;
  }

  // CompareAttention at each distinct window where mma ran, a line each; returns the number that
  // failed.
  int CompareKernelSets(const std::vector<bool>& mma_ok) {
    int failed = 0;
    for (size_t i = 0; i < distinct_.size(); ++i) {
      if (!mma_ok[i]) {
        std::printf("  mma vs tiled, window %lld blocks: not compared (mma failed above)\n",
                    (long long)distinct_[i]);
        continue;
      }
      UploadWindow(ctx_, s_, tokens_, distinct_[i], in_);
      Status st = CompareAttention(ctx_, in_, tiled_, mma_, distinct_[i]);
      if (!st.ok()) {
        std::printf("  mma vs tiled, window %lld blocks: FAILED: %s\n", (long long)distinct_[i],
                    st.message().c_str());
        ++failed;
      }
    }
    return failed;
  }

 private:
  // AttentionForward and AttentionBackward of each layer at `window`: the rows' count.
  int LayersAt(int64_t window) const {
    int layers = 0;
    for (int64_t l = 0; l < s_.m.n_layer; ++l) {
      layers += s_.m.HasAttention(l) && windows_[size_t(l)] == window ? 1 : 0;
    }
    return layers;
  }

  CudaContext& ctx_;
  const StepSetup& s_;
  const std::vector<int32_t>& tokens_;
  const std::vector<int64_t>& windows_;  // one per layer
  AttentionInputs in_;
  AttentionOutputs tiled_, mma_;
  std::vector<int64_t> distinct_;
};

}  // namespace

int BenchAttention(CudaContext& ctx, OpTable& table, const StepSetup& s,
                   const std::vector<int32_t>& tokens, const std::vector<int64_t>& windows,
                   AttentionImpl summed) {
  AttentionBench bench(ctx, s, tokens, windows);
  std::vector<bool> mma_ok = bench.TimeKernelSets(table, summed);
  return bench.CompareKernelSets(mma_ok);
}

}  // namespace ablate::cuda::gpu_bench
