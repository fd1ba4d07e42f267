// Initialisation. Each parameter draws from its own splitmix64 stream keyed by (seed, index), and
// normals come from Box–Muller, so values do not depend on the standard library.
#include "trainer/model/param_init.h"

#include <cmath>
#include <string>

namespace ablate {
namespace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform() { return double(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Normal() {
    double u1 = 1.0 - Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool IsZeroInit(const ModelConfig& m, const std::string& name) {
  if (name == "lm_head.weight") return m.zero_init_lm_head;
  return m.zero_init_proj && (EndsWith(name, "attn.proj.weight") || EndsWith(name, "mlp.proj.weight"));
}

template <class T>
void Fill(T* p, int64_t n, double value) {
  for (int64_t i = 0; i < n; ++i) p[i] = T(value);
}

template <class T>
void InitOne(const ModelConfig& m, const ParamInfo& info, Rng& rng, T* p) {
  const std::string& name = info.name;
  if (IsZeroInit(m, name)) return Fill(p, info.numel, 0.0);
  if (EndsWith(name, "lambdas") && name.find("ve_") == std::string::npos) {
    p[0] = T(1), p[1] = T(0);
  } else if (EndsWith(name, "value_lambda")) {
    p[0] = T(0.5);
  } else if (EndsWith(name, "ve_lambdas")) {
    p[0] = T(0.5), p[1] = T(0.5);
  } else if (name == "skip_weights") {
    Fill(p, info.numel, 1.0);
  } else if (name == "embed.weight" || name.rfind("value_embeds.", 0) == 0) {
    for (int64_t i = 0; i < info.numel; ++i) p[i] = T(rng.Normal());
  } else {
    // Hidden matrices and an untied, non-zero head: U(±a/sqrt(in)), in = last dim.
    double in = double(info.shape.back());
    bool half = m.linear_init == LinearInit::kUniformHalf && name != "lm_head.weight";
    double bound = (half ? std::sqrt(3.0) * 0.5 : 1.0) / std::sqrt(in);
    for (int64_t i = 0; i < info.numel; ++i) p[i] = T((2 * rng.Uniform() - 1) * bound);
  }
}

}  // namespace

template <class T>
void InitParams(const ModelConfig& m, const ParamLayout& layout, uint64_t seed, T* data) {
  uint64_t index = 0;
  for (const ParamInfo& info : layout.params()) {
    Rng rng(seed * 0x100000001B3ull + (++index) * 0x9E3779B97F4A7C15ull);
    InitOne(m, info, rng, data + info.offset);
  }
}

template void InitParams<float>(const ModelConfig&, const ParamLayout&, uint64_t, float*);
template void InitParams<double>(const ModelConfig&, const ParamLayout&, uint64_t, double*);

}  // namespace ablate
