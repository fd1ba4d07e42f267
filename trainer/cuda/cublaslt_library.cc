// dlopen of cuBLASLt: the soname first (the loader's search path), then the toolkit directory
// the build found.
#include "trainer/cuda/cublaslt_library.h"

#ifndef ABLATE_CUBLASLT_SONAME
#error "ABLATE_CUBLASLT_SONAME must name cuBLASLt's soname (trainer/CMakeLists.txt sets it)"
#endif
#ifndef ABLATE_CUBLASLT_DIR
#define ABLATE_CUBLASLT_DIR ""
#endif

namespace ablate::cuda {

Result<const CublasLtLibrary*> CublasLtLibrary::Shared() {
  // Deliberately never destroyed (no unload at exit while CUDA tears down); the function-local
  // static makes the first load thread-safe.
  static const Result<std::unique_ptr<CublasLtLibrary>>* const kLoaded =
      new Result<std::unique_ptr<CublasLtLibrary>>(Load());
  if (!kLoaded->ok()) return kLoaded->error();
  return kLoaded->value().get();
}

Result<std::unique_ptr<CublasLtLibrary>> CublasLtLibrary::Load() {
  Result<std::unique_ptr<SharedLibrary>> opened =
      SharedLibrary::OpenFirst(LibraryCandidates(ABLATE_CUBLASLT_SONAME, ABLATE_CUBLASLT_DIR),
                               "cuBLASLt", "put the CUDA toolkit's lib64 on LD_LIBRARY_PATH");
  if (!opened.ok()) return opened.error();
  std::unique_ptr<CublasLtLibrary> lib(new CublasLtLibrary(std::move(opened).value()));
  const SharedLibrary& so = *lib->lib_;
  CublasLtApi& a = lib->api_;
  for (const Status& s : {
           so.Resolve("cublasLtCreate", &a.Create),
           so.Resolve("cublasLtDestroy", &a.Destroy),
           so.Resolve("cublasLtGetVersion", &a.GetVersion),
           so.Resolve("cublasLtMatmulDescCreate", &a.MatmulDescCreate),
           so.Resolve("cublasLtMatmulDescDestroy", &a.MatmulDescDestroy),
           so.Resolve("cublasLtMatmulDescSetAttribute", &a.MatmulDescSetAttribute),
           so.Resolve("cublasLtMatrixLayoutCreate", &a.MatrixLayoutCreate),
           so.Resolve("cublasLtMatrixLayoutDestroy", &a.MatrixLayoutDestroy),
           so.Resolve("cublasLtMatrixLayoutSetAttribute", &a.MatrixLayoutSetAttribute),
           so.Resolve("cublasLtMatmulPreferenceCreate", &a.MatmulPreferenceCreate),
           so.Resolve("cublasLtMatmulPreferenceDestroy", &a.MatmulPreferenceDestroy),
           so.Resolve("cublasLtMatmulPreferenceSetAttribute", &a.MatmulPreferenceSetAttribute),
           so.Resolve("cublasLtMatmulAlgoGetHeuristic", &a.MatmulAlgoGetHeuristic),
           so.Resolve("cublasLtMatmul", &a.Matmul),
       }) {
    if (!s.ok()) return s.error();
  }
  return lib;
}

}  // namespace ablate::cuda
