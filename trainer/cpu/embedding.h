// Row gathers from an embedding table (token embedding and value embeddings).
#ifndef ABLATE_TRAINER_CPU_EMBEDDING_H_
#define ABLATE_TRAINER_CPU_EMBEDDING_H_

#include <cstdint>

namespace ablate::cpu {

// out (N, C) = table[idx[i]] for i < N; table (Ve, C). REQUIRES: 0 <= idx < Ve.
template <class T>
void embedding_forward(T* out, const T* table, const int32_t* idx, int64_t n, int64_t c);

// dtable[idx[i]] += dout[i] (scatter-add; parallel over channels, so repeated ids are safe).
template <class T>
void embedding_backward(T* dtable, const T* dout, const int32_t* idx, int64_t n, int64_t c);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_EMBEDDING_H_
