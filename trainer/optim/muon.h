// Muon: momentum, Newton–Schulz orthogonalisation and a shape-scaled update, per matrix
// (each (d, d) slice of a merged qkv separately). Distributed as in the records: matrix i is
// orthogonalised by rank i % world, then the updates are all-gathered. fp32 on the CPU.
#ifndef ABLATE_TRAINER_OPTIM_MUON_H_
#define ABLATE_TRAINER_OPTIM_MUON_H_

#include <array>
#include <cstdint>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/dist/communicator.h"
#include "trainer/optim/lr_schedule.h"

namespace ablate {

enum class MuonScaleRule { kSqrtMax1Ratio, kSqrtMaxDim };

struct MuonConfig {
  double lr = 0.02;
  MomentumSchedule momentum;
  bool nesterov = true;
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

double MuonScale(MuonScaleRule rule, int64_t rows, int64_t cols);

class Muon {
 public:
  // This rank keeps momentum only for the matrices it owns (index % world == rank).
  Muon(MuonConfig config, std::vector<MuonMatrix> matrices, int rank, int world);

  // params -= lr·lr_mult·scale·NS(momentum(grads)) for every matrix. grads must already be the
  // mean over ranks. Collective: every rank calls it.
  Status Step(float* params, const float* grads, double lr_mult, int64_t step,
              Communicator& comm);

 private:
  void Update(int64_t index, const float* grads, double lr, double mu, float* out);

  MuonConfig config_;
  std::vector<MuonMatrix> matrices_;
  int rank_, world_;
  std::vector<std::vector<float>> momentum_;  // per matrix; empty unless owned
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_OPTIM_MUON_H_
