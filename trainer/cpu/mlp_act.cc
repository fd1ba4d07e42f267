// Activations, chunked so that each parallel task does a few thousand elements.
#include "trainer/cpu/mlp_act.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "trainer/cpu/parallel.h"

namespace ablate::cpu {
namespace {

constexpr int64_t kActChunk = 4096;
constexpr double kGeluK = 0.7978845608028654;  // sqrt(2/pi)
constexpr double kGeluC = 0.044715;

template <class T>
T Act(T u, MlpAct act) {
  if (act == MlpAct::kRelu2) return u > 0 ? u * u : T(0);
  T th = std::tanh(T(kGeluK) * (u + T(kGeluC) * u * u * u));
  return T(0.5) * u * (T(1) + th);
}

template <class T>
T ActGrad(T u, MlpAct act) {
  if (act == MlpAct::kRelu2) return u > 0 ? T(2) * u : T(0);
  T inner = T(kGeluK) * (u + T(kGeluC) * u * u * u);
  T th = std::tanh(inner);
  T dinner = T(kGeluK) * (T(1) + T(3 * kGeluC) * u * u);
  return T(0.5) * (T(1) + th) + T(0.5) * u * (T(1) - th * th) * dinner;
}

template <class Fn>
void Chunked(int64_t n, const Fn& fn) {
  ParallelFor((n + kActChunk - 1) / kActChunk, [&](int64_t c) {
    for (int64_t i = c * kActChunk, e = std::min(n, i + kActChunk); i < e; ++i) fn(i);
  });
}

// Calls fn(std::integral_constant<MlpAct, act>): the activation and output mode become
// compile-time constants, so each inner loop is branch-free and vectorises.
template <class Fn>
void WithAct(MlpAct act, const Fn& fn) {
  if (act == MlpAct::kRelu2) return fn(std::integral_constant<MlpAct, MlpAct::kRelu2>());
  fn(std::integral_constant<MlpAct, MlpAct::kGelu>());
}

}  // namespace

template <class T>
void mlp_act_forward(T* out, const T* inp, int64_t n, MlpAct act) {
  WithAct(act, [&](auto a) { Chunked(n, [&](int64_t i) { out[i] = Act(inp[i], a()); }); });
}

template <class T>
void mlp_act_backward(T* dinp, const T* dout, const T* inp, int64_t n, MlpAct act, Output mode) {
  WithAct(act, [&](auto a) {
    if (mode == Output::kOverwrite) {
      Chunked(n, [&](int64_t i) { dinp[i] = ActGrad(inp[i], a()) * dout[i]; });
    } else {
      Chunked(n, [&](int64_t i) { dinp[i] += ActGrad(inp[i], a()) * dout[i]; });
    }
  });
}

template void mlp_act_forward<float>(float*, const float*, int64_t, MlpAct);
template void mlp_act_forward<double>(double*, const double*, int64_t, MlpAct);
template void mlp_act_backward<float>(float*, const float*, const float*, int64_t, MlpAct, Output);
template void mlp_act_backward<double>(double*, const double*, const double*, int64_t, MlpAct,
                                       Output);

}  // namespace ablate::cpu
