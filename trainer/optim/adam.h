// Adam with torch.optim.Adam semantics (bias correction, no weight decay), one lr per group and
// shared betas and eps. Every rank runs it on every parameter (the state is small).
#ifndef ABLATE_TRAINER_OPTIM_ADAM_H_
#define ABLATE_TRAINER_OPTIM_ADAM_H_

#include <cstdint>
#include <vector>

namespace ablate {

struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
};

// A contiguous run of the flat parameter buffer with its base lr.
struct AdamSpan {
  int64_t offset = 0;
  int64_t numel = 0;
  double lr = 0;
  // Stored in bf16 (as a bf16 torch parameter): the gradient is read rounded to bf16, and the
  // new m, v and parameter are rounded to bf16 when stored; the arithmetic is fp32.
  bool bf16 = false;
};

class Adam {
 public:
  Adam(AdamConfig config, std::vector<AdamSpan> spans);

  // One step (t = number of calls so far + 1) with lr = span.lr × lr_mult. Splits the work over
  // the calling thread's OpenMP team (cpu::SetThreads); params and grads must not overlap.
  void Step(float* params, const float* grads, double lr_mult);

  // Checkpoints: t and the moments, concatenated in span order (OptimizerState). SetState
  // REQUIRES sizes equal to the spans' total.
  int64_t steps() const { return t_; }
  void GetState(int64_t& steps, std::vector<float>& m, std::vector<float>& v) const;
  void SetState(int64_t steps, const std::vector<float>& m, const std::vector<float>& v);
  int64_t StateSize() const;

 private:
  // [begin, end) of span `span`, relative to the span's start: the unit of parallel work.
  struct Chunk {
    int64_t span, begin, end;
  };

  AdamConfig config_;
  std::vector<AdamSpan> spans_;
  std::vector<std::vector<float>> m_, v_;  // per span
  std::vector<Chunk> chunks_;               // every span cut in pieces of at most kChunk
  int64_t t_ = 0;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_OPTIM_ADAM_H_
