// Embedding gather/scatter. The scatter splits the channel dim across threads so that two tokens
// with the same id never race.
#include "trainer/cpu/embedding.h"

#include <algorithm>
#include <cstring>

#include "trainer/cpu/parallel.h"

namespace ablate::cpu {

template <class T>
void embedding_forward(T* out, const T* table, const int32_t* idx, int64_t n, int64_t c) {
  ParallelFor(n, [&](int64_t i) {
    std::memcpy(out + i * c, table + int64_t(idx[i]) * c, sizeof(T) * c);
  });
}

template <class T>
void embedding_backward(T* dtable, const T* dout, const int32_t* idx, int64_t n, int64_t c) {
  constexpr int64_t kCols = 64;
  ParallelFor((c + kCols - 1) / kCols, [&](int64_t blk) {
    int64_t lo = blk * kCols, hi = std::min(c, lo + kCols);
    for (int64_t i = 0; i < n; ++i) {
      T* row = dtable + int64_t(idx[i]) * c;
      const T* g = dout + i * c;
      for (int64_t j = lo; j < hi; ++j) row[j] += g[j];
    }
  });
}

template void embedding_forward<float>(float*, const float*, const int32_t*, int64_t, int64_t);
template void embedding_forward<double>(double*, const double*, const int32_t*, int64_t, int64_t);
template void embedding_backward<float>(float*, const float*, const int32_t*, int64_t, int64_t);
template void embedding_backward<double>(double*, const double*, const int32_t*, int64_t,
                                         int64_t);

}  // namespace ablate::cpu
