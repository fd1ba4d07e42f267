// Dense products on the CPU (OpenBLAS SGEMM/DGEMM). Weights are (out, in), applied as y = x Wᵀ.
// The templates are instantiated for float (training) and double (finite-difference tests).
#ifndef ABLATE_TRAINER_CPU_MATMUL_H_
#define ABLATE_TRAINER_CPU_MATMUL_H_

#include <cstdint>

#include "trainer/cpu/output.h"

namespace ablate::cpu {

enum class Trans { kNo, kYes };

// Row-major C (m, n) = alpha · op(A) (m, k) · op(B) (k, n) + beta · C.
template <class T>
void Gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// out (N, OC) = inp (N, C) · weightᵀ, weight (OC, C); with Output::kAdd, out += instead.
template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, int64_t n, int64_t c, int64_t oc,
                    Output mode = Output::kOverwrite);

// dinp (N, C) += dout (N, OC) · weight (dinp = with dinp_mode kOverwrite);
// dweight (OC, C) += doutᵀ · inp. Either may be null.
template <class T>
void matmul_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t n,
                     int64_t c, int64_t oc, Output dinp_mode = Output::kAdd);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_MATMUL_H_
