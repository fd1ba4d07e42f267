// Rotary position embedding on (B, T, NH, HD) tensors, pairs (j, j + HD/2), position = index in
// the sequence: y1 = x1·cos + x2·sin, y2 = −x1·sin + x2·cos (MODEL.md "RoPE").
#ifndef ABLATE_TRAINER_CPU_ROPE_H_
#define ABLATE_TRAINER_CPU_ROPE_H_

#include <cstdint>
#include <vector>

namespace ablate::cpu {

enum class RopeKind { kFull, kHalfTruncated };

// Angle tables, each (T, HD/2): full uses θ_j = base^(−2j/HD); half_truncated uses
// (1/1024)^(j/(HD/4 − 1)) for j < HD/4 and 0 (identity) for the rest.
template <class T>
struct RopeTable {
  std::vector<T> cos;  // (T, HD/2)
  std::vector<T> sin;  // (T, HD/2)
};

template <class T>
RopeTable<T> rope_table(int64_t seq_len, int64_t head_dim, RopeKind kind, double base);

// out = rope(inp); out may alias inp.
template <class T>
void rope_forward(T* out, const T* inp, const RopeTable<T>& table, int64_t b, int64_t t,
                  int64_t nh, int64_t hd);

// dinp = ropeᵀ(dout) (overwrites; dinp may alias dout).
template <class T>
void rope_backward(T* dinp, const T* dout, const RopeTable<T>& table, int64_t b, int64_t t,
                   int64_t nh, int64_t hd);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_ROPE_H_
