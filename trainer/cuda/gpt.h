// The GPT of MODEL.md on one GPU: the CPU model (trainer/model/gpt.h) op for op, with the CUDA
// twins of its ops. Parameters, gradients and optimizer state are fp32 in device memory in the
// padded DeviceLayout; the GEMMs read a bf16 copy of the weights (RefreshWeights after every
// change); activations are stored as the precision plan in trainer/README.md says (residual
// stream fp32, GEMM and attention operands bf16). Not thread-safe; one host thread drives it.
#ifndef ABLATE_TRAINER_CUDA_GPT_H_
#define ABLATE_TRAINER_CUDA_GPT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "trainer/config/attention_impl.h"
#include "trainer/config/result.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/cuda_event.h"
#include "trainer/cuda/device_buffer.h"
#include "trainer/cuda/device_layout.h"
#include "trainer/cuda/dtype.h"
#include "trainer/cuda/dx_copy_plan.h"
#include "trainer/cuda/embedding.h"
#include "trainer/cuda/qkv.h"
#include "trainer/cuda/residual.h"
#include "trainer/cuda/rope.h"
#include "trainer/cuda/softcap_cross_entropy.h"
#include "trainer/model/gpt.h"
#include "trainer/model/model_config.h"
#include "trainer/model/param_layout.h"

namespace ablate::cuda {

struct LayerActs;
template <class S>
struct LayerStream;

class Gpt {
 public:
  // Allocates everything for micro-batches of b sequences of t tokens on ctx's device (which
  // must outlive the model). Parameters and gradients start at zero. Error: the first failed
  // allocation, naming the tensor.
  static Result<std::unique_ptr<Gpt>> Create(CudaContext& ctx, const ModelConfig& m, int64_t b,
                                             int64_t t);
  ~Gpt();
  Gpt(const Gpt&) = delete;
  Gpt& operator=(const Gpt&) = delete;

  const ModelConfig& config() const { return m_; }
  const ParamLayout& layout() const { return layout_; }
  const DeviceLayout& device_layout() const { return dev_; }
  float* params() { return params_; }  // (device_layout().total()) fp32 master weights
  float* grads() { return grads_; }    // (device_layout().total()) fp32
  int64_t batch() const { return b_; }
  int64_t seq() const { return t_; }
  int64_t allocated_bytes() const { return allocated_; }

  // host (layout().total()) in the CPU layout → params(), then RefreshWeights().
  Status SetParams(const float* host);
  Status GetParams(float* host);
  Status GetGrads(float* host);
  Status ZeroGrads();
  // bf16 weights ← params(); call after every change of params().
  Status RefreshWeights();

  // tokens (B, T+1) int32 on the host: inputs [:, :T], targets [:, 1:]. windows: per-layer
  // window blocks (LayerWindowBlocks). Adds (mean loss) / divisor to the loss accumulator.
  // REQUIRES: inputs < embed_vocab_size, targets < vocab_size.
  Status Forward(const int32_t* tokens, const std::vector<int64_t>& windows, int64_t divisor);
  // As Forward, and grads() += d((mean loss) / divisor)/d(params).
  Status ForwardBackward(const int32_t* tokens, const std::vector<int64_t>& windows,
                         int64_t divisor);
  // hook(i) runs on the host right after block i's backward is queued (i = L−1 down to 0): from
  // that point of the stream on, nothing writes block i's gradients again in this backward.
  // Lets the engine start reducing them while the backward goes on. Empty: none.
  void SetBlockGradsHook(std::function<Status(int64_t)> hook) { block_hook_ = std::move(hook); }
  // Which attention kernels Forward and ForwardBackward run (attention.h); kAuto until set. A
  // choice the shape cannot take fails the next Forward with attention's Error.
  void set_attention(AttentionImpl impl) { attention_ = impl; }
  // The loss accumulator (waits for the device), then resets it to 0.
  Result<float> TakeLoss();
  // Queues: dst (1 float, device) ← the loss accumulator, then the accumulator ← 0. No wait.
  Status MoveLoss(float* dst);
  // Per-token losses (B·T) of the last forward (waits for the device).
  Status GetLosses(float* host);
  // fp32 → bf16 passes over dx that the last backward ran because dx's writer had not written
  // the bf16 copy too (gpt_backward.cc): 0 for every layer structure the writers know.
  int64_t dxb_conversions() const { return dxb_conversions_; }

 private:
  Gpt(CudaContext& ctx, const ModelConfig& m, int64_t b, int64_t t);
  template <class T>
  Status Alloc(T** out, int64_t n, const std::string& what);
  Status AllocateAll();
  Status AllocateLayer(int64_t i, LayerActs& a);
  template <class S>
  Status AllocateStream(int64_t i, LayerStream<S>& s);
  Status AllocateBackward();

  // One pinned host buffer for a micro-batch's inputs (see Stage).
  struct Staging {
    PinnedBuffer<int32_t> host;
    CudaEvent copied;  // recorded after the copies out of `host`
    bool used = false;
  };
  Status Stage(const int32_t* tokens, const std::vector<int64_t>& windows, bool train);
  Result<int32_t*> StageWindow(const int32_t* tokens, int32_t* lo_host, int64_t window,
                               std::vector<int64_t>& staged);
  Status Run(const int32_t* tokens, const std::vector<int64_t>& windows, int64_t divisor,
             bool train);
  // The forward (and backward) with the stream's values stored as S: float for an fp32 stream,
  // bf16 for a bf16 one (activation_dtype), the same values at half the bytes.
  template <class S>
  Status RunStream(int64_t divisor, bool train);
  template <class S>
  Status EmbedForward();
  template <class S>
  Result<const S*> BlockForward(int64_t i, const S* x);
  template <class S>
  Status AttentionForward(int64_t i, LayerActs& a);
  void ValueMixOf(int64_t i, QkvForwardArgs& q);
  template <class S>
  Status MlpForward(int64_t i, LayerActs& a);
  template <class S>
  Status HeadForward(const S* x, int64_t divisor, bool train);
  Rounding StreamRounding() const;
  template <class S>
  Status AddBranch(S* out, const S* x, const bf16* act, const bf16* w, int64_t in);
  template <class S>
  Status Backward();
  template <class S>
  Status BlockBackward(int64_t i);
  template <class S>
  Status MlpBackward(int64_t i, LayerActs& a);
  template <class S>
  Status AttentionBackward(int64_t i, LayerActs& a);
  Result<const float*> ValueMixBackward(int64_t i, LayerActs& a);
  template <class S>
  Status ShortcutBackward(int64_t i, LayerActs& a);
  template <class S>
  Status SkipBackward(int64_t i, LayerActs& a);
  Status EmbedBackward(const float* dx0);
  // x0 and the head's input stream in the stream's storage type.
  template <class S>
  S* X0() {
    if constexpr (std::is_same_v<S, float>) {
      return x0_;
    } else {
      return x0b_;
    }
  }
  template <class S>
  const S*& XLast() {
    if constexpr (std::is_same_v<S, float>) {
      return x_last_;
    } else {
      return x_lastb_;
    }
  }
  // dxb_ when `wanted` (else null) for a writer of dx_ to write bf16(dx_) into; records whether
  // dxb_ then matches dx_.
  bf16* DxbIf(bool wanted);
  // dxb_ = bf16(dx_) unless dx_'s last writer wrote it (counted in dxb_conversions_).
  Status EnsureDxb();

  float* P(int64_t off) { return params_ + off; }
  float* G(int64_t off) { return grads_ + off; }
  const bf16* W(int64_t off) const { return weights_ + off; }

  CudaContext& ctx_;
  ModelConfig m_;
  ParamLayout layout_;
  DeviceLayout dev_;
  int64_t b_, t_, n_;                 // n_ = b_ * t_
  std::vector<BlockOffsets> blocks_;  // device offsets
  int64_t embed_ = 0, head_ = 0, skip_ = -1;
  int64_t first_attn_ = -1, last_attn_ = -1;
  RopeTable rope_;

  std::vector<DeviceBuffer<float>> f32_;
  std::vector<DeviceBuffer<bf16>> b16_;
  std::vector<DeviceBuffer<int32_t>> i32_;
  int64_t allocated_ = 0;

  float *params_ = nullptr, *grads_ = nullptr;
  bf16* weights_ = nullptr;

  // Inputs of the current micro-batch. Host side: two pinned buffers used in turn, so the host
  // fills one while the device may still copy from the other; device side: one set.
  Staging staging_[2];
  int64_t stages_ = 0;
  int32_t *inputs_ = nullptr, *targets_ = nullptr;
  int32_t* plan_packed_ = nullptr;  // (PackedEmbeddingPlanInts(BT)): the embedding backward's plan
  DeviceEmbeddingPlan plan_;
  float* embed_partials_ = nullptr;  // (EmbeddingPartialRows(BT), C): its segments' partial sums
  std::vector<int32_t*> lo_slots_;   // (n_layer) × (B, T): one per distinct window in a forward

  // Activations. x0 and the head's input as the stream stores them: fp32 (x0_ is emb_ without
  // the embedding norm) or bf16 (x0b_).
  float *emb_ = nullptr, *emb_rstd_ = nullptr, *x0_ = nullptr;  // (BT, C), (BT), (BT, C)
  bf16* x0b_ = nullptr;                                         // (BT, C)
  std::vector<LayerActs> layers_;
  const float* x_last_ = nullptr;
  const bf16* x_lastb_ = nullptr;
  bf16* lf_ = nullptr;  // (BT, C)
  float* lf_rstd_ = nullptr;
  float* losses_ = nullptr;        // (BT)
  DeviceBuffer<double> loss_acc_;  // (1): the reported loss, summed in double
  LmHeadScratch head_scratch_;
  bf16* qkv_ = nullptr;  // (BT, 3C): the QKV product, then d(qkv) in the backward
  bf16* act_ = nullptr;  // (BT, F): act(fc), recomputed per layer in the backward
  float* ve_ = nullptr;  // (BT, C) value-embedding rows of the current layer (backward)

  // Backward scratch (dx_ and dtmp_ swap roles).
  float *dx_ = nullptr, *dtmp_ = nullptr, *dx0_ = nullptr, *dv1_ = nullptr, *dln_ = nullptr;
  bf16 *dxb_ = nullptr, *datt_ = nullptr, *dact_ = nullptr;  // (BT, C), (BT, C), (BT, F)
  float *dq_ = nullptr, *dk_ = nullptr, *dv_ = nullptr;      // (BT, C)
  float *dv_raw_ = nullptr, *dve_ = nullptr;
  float* d_rows_ = nullptr;    // (B, NH, T) attention's rowsum(dout ⊙ out)
  std::vector<float*> dskip_;  // (L/2) × (BT, C)
  DxCopyPlan dx_copies_;       // which writers of dx_ write dxb_ too
  bool dxb_current_ = false;   // dxb_ = bf16(dx_)
  int64_t dxb_conversions_ = 0;
  std::function<Status(int64_t)> block_hook_;
  AttentionImpl attention_ = AttentionImpl::kAuto;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_GPT_H_
