// GEMM through OpenBLAS. Everything row-major; the op layer never sees BLAS types.
// OpenBLAS itself always runs single-threaded: the op's OpenMP team splits large products into
// column or row blocks, so one thread pool serves both the BLAS calls and the element-wise loops
// (two pools on two cores starve each other; see bench/trainer_cpu/NOTES.md), and GEMMs issued
// inside a parallel loop (attention tiles) never wake BLAS threads.
#include "trainer/cpu/matmul.h"

#include <cblas.h>
#include <omp.h>

#include <algorithm>

#include "trainer/cpu/parallel.h"

namespace ablate::cpu {
namespace {

CBLAS_TRANSPOSE ToBlas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

void BlasGemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
              int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, ToBlas(ta), ToBlas(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void BlasGemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
              int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  cblas_dgemm(CblasRowMajor, ToBlas(ta), ToBlas(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// Below this many multiply-adds a product runs on the calling thread: waking the team costs more
// than the second core gives back.
constexpr int64_t kSplitMacs = int64_t(1) << 22;

// Blocks per team thread when a GEMM is split: a few, handed out dynamically, so that a
// preempted thread delays the product by one block, not by half of it.
constexpr int64_t kBlocksPerThread = 4;

// Length of each of `parts` blocks covering `extent`, rounded up to a multiple of 16.
inline int64_t BlockSize(int64_t extent, int64_t parts) {
  return ((extent + parts - 1) / parts + 15) / 16 * 16;
}

}  // namespace

void SetThreads(int threads) {
  omp_set_num_threads(threads);
  openblas_set_num_threads(1);
}

// Splits the longer side of C over the team; each block is an independent BLAS call.
template <class T>
void Gemm(Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads <= 1 || m * n * k < kSplitMacs) {
    return BlasGemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  bool by_rows = m >= n;
  int64_t extent = by_rows ? m : n, block = BlockSize(extent, kBlocksPerThread * threads);
  ParallelForDynamic((extent + block - 1) / block, [&](int64_t i) {
    int64_t lo = i * block, len = std::min(block, extent - lo);
    if (by_rows) {  // rows lo.. of op(A) and C
      const T* ai = ta == Trans::kNo ? a + lo * lda : a + lo;
      BlasGemm(ta, tb, len, n, k, alpha, ai, lda, b, ldb, beta, c + lo * ldc, ldc);
    } else {  // columns lo.. of op(B) and C
      const T* bi = tb == Trans::kNo ? b + lo : b + lo * ldb;
      BlasGemm(ta, tb, m, len, k, alpha, a, lda, bi, ldb, beta, c + lo, ldc);
    }
  });
}

template void Gemm<float>(Trans, Trans, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void Gemm<double>(Trans, Trans, int64_t, int64_t, int64_t, double, const double*,
                           int64_t, const double*, int64_t, double, double*, int64_t);

template <class T>
void matmul_forward(T* out, const T* inp, const T* weight, int64_t n, int64_t c, int64_t oc,
                    Output mode) {
  T beta = mode == Output::kAdd ? T(1) : T(0);
  Gemm<T>(Trans::kNo, Trans::kYes, n, oc, c, T(1), inp, c, weight, c, beta, out, oc);
}

template <class T>
void matmul_backward(T* dinp, T* dweight, const T* dout, const T* inp, const T* weight, int64_t n,
                     int64_t c, int64_t oc, Output dinp_mode) {
  if (dinp != nullptr) {
    T beta = dinp_mode == Output::kAdd ? T(1) : T(0);
    Gemm<T>(Trans::kNo, Trans::kNo, n, c, oc, T(1), dout, oc, weight, c, beta, dinp, c);
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
                                     int64_t, int64_t, int64_t, Output);
template void matmul_backward<double>(double*, double*, const double*, const double*,
                                      const double*, int64_t, int64_t, int64_t, Output);

}  // namespace ablate::cpu
