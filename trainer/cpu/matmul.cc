// GEMM through OpenBLAS. Everything row-major; the op layer never sees BLAS types.
#include "trainer/cpu/matmul.h"

#include <cblas.h>
#include <omp.h>

#include "trainer/cpu/parallel.h"

namespace ablate::cpu {
namespace {

CBLAS_TRANSPOSE ToBlas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

}  // namespace

void SetThreads(int threads) {
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

template <>
void Gemm<float>(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ToBlas(ta), ToBlas(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <>
void Gemm<double>(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, double alpha,
                  const double* a, int64_t lda, const double* b, int64_t ldb, double beta,
                  double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ToBlas(ta), ToBlas(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, int64_t n, int64_t c, int64_t oc,
                    Output mode) {
  T beta = mode == Output::kAdd ? T(1) : T(0);
  Gemm<T>(Trans::kNo, Trans::kYes, n, oc, c, T(1), inp, c, weight, c, beta, out, oc);
}

template <class T>
void matmul_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t n,
                     int64_t c, int64_t oc) {
  if (dinp != nullptr) {
    Gemm<T>(Trans::kNo, Trans::kNo, n, c, oc, T(1), dout, oc, weight, c, T(1), dinp, c);
  }
  if (dweight != nullptr) {
    Gemm<T>(Trans::kYes, Trans::kNo, oc, c, n, T(1), dout, oc, inp, c, T(1), dweight, c);
  }
}

template void matmul_forward<float>(float*, const float*, const float*, int64_t, int64_t, int64_t,
                                    Output);
template void matmul_forward<double>(double*, const double*, const double*, int64_t, int64_t,
                                     int64_t, Output);
template void matmul_backward<float>(float*, float*, const float*, const float*, const float*,
                                     int64_t, int64_t, int64_t);
template void matmul_backward<double>(double*, double*, const double*, const double*,
                                      const double*, int64_t, int64_t, int64_t);

}  // namespace ablate::cpu
