// cuBLASLt GEMMs. cuBLASLt is column-major; a row-major D (m, n) is a column-major Dᵀ (n, m), so
// D = op(A) op(B) is computed as Dᵀ = op(B)ᵀ op(A)ᵀ: the operands swap places and keep their
// own transpose flags (a row-major matrix read column-major is its transpose already).
// Algorithms are chosen by cuBLASLt's heuristic once per shape and cached in the context.
#include "trainer/cuda/matmul.h"

#include <string>
#include <type_traits>

#include "trainer/cuda/cuda_check.h"

namespace ablate::cuda {
namespace {

template <class T>
cudaDataType_t DataType() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, bf16>);
  return std::is_same_v<T, float> ? CUDA_R_32F : CUDA_R_16BF;
}

cublasOperation_t Op(Trans t) { return t == Trans::kYes ? CUBLAS_OP_T : CUBLAS_OP_N; }

// Largest power of two (at most 256) dividing the address and every batch offset, in bytes:
// the alignment cuBLASLt may assume for the operand.
uint32_t Alignment(const void* p, int64_t stride_bytes) {
  uint64_t bits = reinterpret_cast<uint64_t>(p) | uint64_t(256);
  if (stride_bytes != 0) bits |= uint64_t(stride_bytes);
  return uint32_t(bits & (~bits + 1));  // lowest set bit
}

// A column-major stored matrix: rows × cols, leading dimension ld (all in elements).
struct Layout {
  cudaDataType_t type;
  int64_t rows, cols, ld;
  int64_t stride;  // batch stride in elements
};

// Owners of cuBLASLt descriptors, so every return path destroys what was created.
struct LayoutHandle {
  const CublasLtApi& lt;
  cublasLtMatrixLayout_t h = nullptr;
  ~LayoutHandle() {
    if (h != nullptr) (void)lt.MatrixLayoutDestroy(h);
  }
};
struct DescHandle {
  const CublasLtApi& lt;
  cublasLtMatmulDesc_t h = nullptr;
  ~DescHandle() {
    if (h != nullptr) (void)lt.MatmulDescDestroy(h);
  }
};
struct PrefHandle {
  const CublasLtApi& lt;
  cublasLtMatmulPreference_t h = nullptr;
  ~PrefHandle() {
    if (h != nullptr) (void)lt.MatmulPreferenceDestroy(h);
  }
};

Status MakeLayout(const CublasLtApi& lt, const Layout& l, int batch, LayoutHandle* out) {
  ABLATE_CUBLAS_CHECK(
      lt.MatrixLayoutCreate(&out->h, l.type, uint64_t(l.rows), uint64_t(l.cols), l.ld));
  if (batch > 1) {
    int32_t count = batch;
    int64_t stride = l.stride;
    ABLATE_CUBLAS_CHECK(lt.MatrixLayoutSetAttribute(out->h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                    &count, sizeof(count)));
    ABLATE_CUBLAS_CHECK(lt.MatrixLayoutSetAttribute(
        out->h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)));
  }
  return {};
}

// Everything the heuristic's choice depends on.
std::string CacheKey(cublasOperation_t op_a, cublasOperation_t op_b, const Layout& a,
                     const Layout& b, const Layout& d, int batch, const uint32_t align[4]) {
  std::string key;
  for (int64_t v : {int64_t(op_a),
                    int64_t(op_b),
                    int64_t(a.type),
                    a.rows,
                    a.cols,
                    a.ld,
                    a.stride,
                    int64_t(b.type),
                    b.rows,
                    b.cols,
                    b.ld,
                    b.stride,
                    int64_t(d.type),
                    d.rows,
                    d.cols,
                    d.ld,
                    d.stride,
                    int64_t(batch),
                    int64_t(align[0]),
                    int64_t(align[1]),
                    int64_t(align[2]),
                    int64_t(align[3])}) {
    key += std::to_string(v);
    key += ',';
  }
  return key;
}

std::string Describe(const Layout& a, const Layout& b, const Layout& d, int batch) {
  auto dims = [](const Layout& l) {
    return std::to_string(l.rows) + "x" + std::to_string(l.cols) + " (ld " + std::to_string(l.ld) +
           ")";
  };
  return "A " + dims(a) + ", B " + dims(b) + ", D " + dims(d) + ", batch " + std::to_string(batch);
}

// Picks (or recalls) an algorithm for the described product.
Result<GemmAlgo> ChooseAlgo(CudaContext& ctx, cublasLtMatmulDesc_t desc, cublasOperation_t op_a,
                            cublasOperation_t op_b, const Layout& a, const Layout& b,
                            const Layout& d, int batch, const LayoutHandle& ha,
                            const LayoutHandle& hb, const LayoutHandle& hd,
                            const uint32_t align[4]) {
  std::string key = CacheKey(op_a, op_b, a, b, d, batch, align);
  auto it = ctx.gemm_algos().find(key);
  if (it != ctx.gemm_algos().end()) return it->second;
  const CublasLtApi& lt = ctx.lt();
  PrefHandle pref{lt};
  ABLATE_CUBLAS_CHECK(lt.MatmulPreferenceCreate(&pref.h));
  uint64_t workspace = uint64_t(CudaContext::kWorkspaceBytes);
  ABLATE_CUBLAS_CHECK(lt.MatmulPreferenceSetAttribute(
      pref.h, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace)));
  const cublasLtMatmulPreferenceAttributes_t kAlignAttr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) {
    ABLATE_CUBLAS_CHECK(
        lt.MatmulPreferenceSetAttribute(pref.h, kAlignAttr[i], &align[i], sizeof(align[i])));
  }
  cublasLtMatmulHeuristicResult_t result = {};
  int found = 0;
  ABLATE_CUBLAS_CHECK(lt.MatmulAlgoGetHeuristic(ctx.lt_handle(), desc, ha.h, hb.h, hd.h, hd.h,
                                                pref.h, 1, &result, &found));
  if (found == 0 || result.state != CUBLAS_STATUS_SUCCESS) {
    return Error{"cuBLASLt has no algorithm for " + Describe(a, b, d, batch), ""};
  }
  GemmAlgo algo{result.algo, result.workspaceSize};
  ctx.gemm_algos().emplace(key, algo);
  return algo;
}

}  // namespace

template <class TOut>
Status Gemm(CudaContext& ctx, Trans ta, Trans tb, int64_t m, int64_t n, int64_t k, float alpha,
            const bf16* a, int64_t lda, const bf16* b, int64_t ldb, float beta, const TOut* c,
            TOut* d, int64_t ldc, const GemmBatch& batch) {
  if (m == 0 || n == 0) return {};
  const CublasLtApi& lt = ctx.lt();
  // Column-major view (see the file comment): first operand is B's memory, second is A's.
  cublasOperation_t op_first = Op(tb), op_second = Op(ta);
  Layout first{CUDA_R_16BF, tb == Trans::kNo ? n : k, tb == Trans::kNo ? k : n, ldb,
               batch.stride_b};
  Layout second{CUDA_R_16BF, ta == Trans::kNo ? k : m, ta == Trans::kNo ? m : k, lda,
                batch.stride_a};
  Layout out{DataType<TOut>(), n, m, ldc, batch.stride_c};
  if (c == nullptr || beta == 0.f) c = d;
  const uint32_t align[4] = {Alignment(b, batch.stride_b * 2), Alignment(a, batch.stride_a * 2),
                             Alignment(c, batch.stride_c * int64_t(sizeof(TOut))),
                             Alignment(d, batch.stride_c * int64_t(sizeof(TOut)))};
  DescHandle desc{lt};
  ABLATE_CUBLAS_CHECK(lt.MatmulDescCreate(&desc.h, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  ABLATE_CUBLAS_CHECK(
      lt.MatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)));
  ABLATE_CUBLAS_CHECK(lt.MatmulDescSetAttribute(desc.h, CUBLASLT_MATMUL_DESC_TRANSB, &op_second,
                                                sizeof(op_second)));
  LayoutHandle h_first{lt}, h_second{lt}, h_out{lt};
  ABLATE_RETURN_IF_ERROR(MakeLayout(lt, first, batch.count, &h_first));
  ABLATE_RETURN_IF_ERROR(MakeLayout(lt, second, batch.count, &h_second));
  ABLATE_RETURN_IF_ERROR(MakeLayout(lt, out, batch.count, &h_out));
  Result<GemmAlgo> algo = ChooseAlgo(ctx, desc.h, op_first, op_second, first, second, out,
                                     batch.count, h_first, h_second, h_out, align);
  if (!algo.ok()) return algo.error();
  ABLATE_CUBLAS_CHECK(lt.Matmul(ctx.lt_handle(), desc.h, &alpha, b, h_first.h, a, h_second.h, &beta,
                                c, h_out.h, d, h_out.h, &algo->algo, ctx.workspace(),
                                size_t(CudaContext::kWorkspaceBytes), ctx.stream()));
  return {};
}

template <class TOut>
Status matmul_forward(CudaContext& ctx, TOut* out, const bf16* inp, const bf16* weight, int64_t n,
                      int64_t c, int64_t oc, Output mode) {
  float beta = mode == Output::kAdd ? 1.f : 0.f;
  return Gemm<TOut>(ctx, Trans::kNo, Trans::kYes, n, oc, c, 1.f, inp, c, weight, c, beta, out, out,
                    oc);
}

Status matmul_forward_add(CudaContext& ctx, float* out, const float* base, const bf16* inp,
                          const bf16* weight, int64_t n, int64_t c, int64_t oc) {
  return Gemm<float>(ctx, Trans::kNo, Trans::kYes, n, oc, c, 1.f, inp, c, weight, c, 1.f, base,
                     out, oc);
}

template <class TDin>
Status matmul_backward(CudaContext& ctx, TDin* dinp, float* dweight, const bf16* dout,
                       const bf16* inp, const bf16* weight, int64_t n, int64_t c, int64_t oc,
                       Output dinp_mode) {
  if (dinp != nullptr) {
    float beta = dinp_mode == Output::kAdd ? 1.f : 0.f;
    ABLATE_RETURN_IF_ERROR(Gemm<TDin>(ctx, Trans::kNo, Trans::kNo, n, c, oc, 1.f, dout, oc, weight,
                                      c, beta, dinp, dinp, c));
  }
  if (dweight != nullptr) {
    ABLATE_RETURN_IF_ERROR(Gemm<float>(ctx, Trans::kYes, Trans::kNo, oc, c, n, 1.f, dout, oc, inp,
                                       c, 1.f, dweight, dweight, c));
  }
  return {};
}

template Status Gemm<float>(CudaContext&, Trans, Trans, int64_t, int64_t, int64_t, float,
                            const bf16*, int64_t, const bf16*, int64_t, float, const float*, float*,
                            int64_t, const GemmBatch&);
template Status Gemm<bf16>(CudaContext&, Trans, Trans, int64_t, int64_t, int64_t, float,
                           const bf16*, int64_t, const bf16*, int64_t, float, const bf16*, bf16*,
                           int64_t, const GemmBatch&);
template Status matmul_forward<float>(CudaContext&, float*, const bf16*, const bf16*, int64_t,
                                      int64_t, int64_t, Output);
template Status matmul_forward<bf16>(CudaContext&, bf16*, const bf16*, const bf16*, int64_t,
                                     int64_t, int64_t, Output);
template Status matmul_backward<float>(CudaContext&, float*, float*, const bf16*, const bf16*,
                                       const bf16*, int64_t, int64_t, int64_t, Output);
template Status matmul_backward<bf16>(CudaContext&, bf16*, float*, const bf16*, const bf16*,
                                      const bf16*, int64_t, int64_t, int64_t, Output);

}  // namespace ablate::cuda
