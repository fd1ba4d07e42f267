// Muon: momentum, Newton–Schulz orthogonalisation and a shape-scaled update, per matrix
// (each (d, d) slice of a merged qkv separately). Distributed as in the records: matrix i is
// orthogonalised by rank i % world, then the updates are all-gathered. fp32 on the CPU.
#ifndef ABLATE_TRAINER_OPTIM_MUON_H_
#define ABLATE_TRAINER_OPTIM_MUON_H_

#include <array>
#include <cstdint>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/collectives/communicator.h"
#include "trainer/optim/lr_schedule.h"

namespace ablate {

enum class MuonScaleRule { kSqrtMax1Ratio, kSqrtMaxDim };
// How the momentum buffer and the Nesterov update are formed (MODEL.md "Muon"):
// kSum: buf = μ·buf + g, update g + μ·buf (r8–r11);
// kLerp: buf = lerp(buf, g, 1 − μ), update lerp(g, buf, μ) (r15+), torch.lerp's arithmetic.
enum class MomentumForm { kSum, kLerp };

// torch.lerp(a, b, w) as ATen computes it (two branches, exact at w = 0 and w = 1); the CUDA
// kernel (cuda/optim.cu) has the same twin.
inline float TorchLerp(float a, float b, float w) {
  float diff = b - a;
  return (w < 0.5f && w > -0.5f) ? a + w * diff : b - diff * (1.f - w);
}

struct MuonConfig {
  double lr = 0.02;
  MomentumSchedule momentum;
  bool nesterov = true;
  MomentumForm momentum_form = MomentumForm::kSum;
  int ns_steps = 5;
  std::array<double, 3> ns_coeffs = {3.4445, -4.7750, 2.0315};
  MuonScaleRule scale_rule = MuonScaleRule::kSqrtMax1Ratio;
};

// One (rows, cols) matrix at `offset` in the flat parameter buffer.
struct MuonMatrix {
  int64_t offset = 0;
  int64_t rows = 0;
  int64_t cols = 0;
};

// X (rows, cols), in place: X/(‖X‖_F + 1e-7), transposed when rows > cols, `steps` quintic
// iterations X = aX + (bA + cA²)X with A = XXᵀ, transposed back.
void NewtonSchulz(float* x, int64_t rows, int64_t cols, int steps,
                  const std::array<double, 3>& coeffs);

// Work buffers of NewtonSchulz, grown on demand and kept for the next call (one per thread).
struct NsScratch {
  std::vector<float> a, b, next, transposed;
};

// As above, reusing `scratch` instead of allocating.
void NewtonSchulz(float* x, int64_t rows, int64_t cols, int steps,
                  const std::array<double, 3>& coeffs, NsScratch& scratch);

double MuonScale(MuonScaleRule rule, int64_t rows, int64_t cols);

// How distributed Muon shares its matrices (the CPU twin and the CUDA backend alike): matrix i
// is orthogonalised by rank i % world; round r holds matrices r·world .. r·world + world − 1,
// and has a slot as wide as its widest matrix at round_offsets[r] in each rank's part of the
// gathered buffer (width elements a rank). One all-gather of every rank's part then gives every
// rank every update.
struct MuonGatherLayout {
  std::vector<int64_t> round_offsets;  // (rounds)
  int64_t width = 0;                   // elements of one rank's part
  int world = 1;

  static MuonGatherLayout Make(const std::vector<MuonMatrix>& matrices, int world);
  int Owner(int64_t i) const { return int(i % world); }
  // Where matrix i's update sits in its owner's part.
  int64_t LocalOffset(int64_t i) const { return round_offsets[size_t(i / world)]; }
  // Where it sits in the gathered (world, width) buffer.
  int64_t GatheredOffset(int64_t i) const { return Owner(i) * width + LocalOffset(i); }
};

class Muon {
 public:
  // This rank keeps momentum only for the matrices it owns (index % world == rank).
  Muon(MuonConfig config, std::vector<MuonMatrix> matrices, int rank, int world);

  // params -= lr·lr_mult·scale·NS(momentum(grads)) for every matrix. grads must already be the
  // mean over ranks. Collective: every rank calls it, and each makes one AllGather call.
  // Splits its matrices over the calling thread's OpenMP team.
  Status Step(float* params, const float* grads, double lr_mult, int64_t step,
              Communicator& comm);

  // Checkpoints: every matrix's momentum, concatenated in matrix order. GetState is collective
  // (each rank holds only its own matrices'; a sum over ranks assembles them, exactly, since
  // the others contribute zeros). SetState keeps this rank's matrices'; REQUIRES the full size.
  Status GetState(std::vector<float>& momentum, Communicator& comm) const;
  void SetState(const std::vector<float>& momentum);
  int64_t StateSize() const;

 private:
  void Update(int64_t index, const float* grads, double lr, double mu, float* out,
              NsScratch& scratch);

  MuonConfig config_;
  std::vector<MuonMatrix> matrices_;
  int rank_, world_;
  std::vector<std::vector<float>> momentum_;  // per matrix; empty unless owned
  MuonGatherLayout gather_;
  std::vector<float> mine_, all_;  // (gather_.width), (world, gather_.width)
  std::vector<NsScratch> scratch_;  // per OpenMP thread
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_OPTIM_MUON_H_
