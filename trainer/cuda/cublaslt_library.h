// cuBLASLt, opened at run time (dlopen) rather than linked: ablate-train then starts, and runs
// --backend cpu, on machines without CUDA libraries, and a CPU process does not map cuBLASLt's
// 500 MB (measured: +70 ms and +210 MB resident at start when linked). The soname and a fallback
// directory (the toolkit's lib dir at build time) are compiled in; see trainer/CMakeLists.txt.
#ifndef ABLATE_TRAINER_CUDA_CUBLASLT_LIBRARY_H_
#define ABLATE_TRAINER_CUDA_CUBLASLT_LIBRARY_H_

#include <cublasLt.h>

#include <memory>
#include <string>

#include "trainer/config/result.h"
#include "trainer/sys/shared_library.h"

namespace ablate::cuda {

// The cuBLASLt entry points the backend uses, with the library's own signatures.
struct CublasLtApi {
  decltype(&cublasLtCreate) Create = nullptr;
  decltype(&cublasLtDestroy) Destroy = nullptr;
  decltype(&cublasLtGetVersion) GetVersion = nullptr;
  decltype(&cublasLtMatmulDescCreate) MatmulDescCreate = nullptr;
  decltype(&cublasLtMatmulDescDestroy) MatmulDescDestroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) MatrixLayoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic = nullptr;
  decltype(&cublasLtMatmul) Matmul = nullptr;
};

// An opened cuBLASLt. Thread-safe once loaded (the table is read-only).
class CublasLtLibrary {
 public:
  // The process's cuBLASLt: opened by the first call, from any thread, and never closed. Every
  // later call returns the same library, or the first call's error (the loader's search path
  // does not change while the process runs). Loading once matters: cuBLASLt is ~500 MB of code,
  // and unloading it while CUDA still holds its kernels' modules is not safe.
  static Result<const CublasLtLibrary*> Shared();

  // Opens the library and resolves every entry point. Error: which file could not be opened
  // (dlerror's words) or which symbol is missing. Shared() is the one caller.
  static Result<std::unique_ptr<CublasLtLibrary>> Load();

  const CublasLtApi& api() const { return api_; }
  const std::string& path() const { return lib_->path(); }

 private:
  explicit CublasLtLibrary(std::unique_ptr<SharedLibrary> lib) : lib_(std::move(lib)) {}
  std::unique_ptr<SharedLibrary> lib_;
  CublasLtApi api_;
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_CUBLASLT_LIBRARY_H_
