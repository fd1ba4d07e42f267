// dlopen of cuBLASLt: the soname first (the loader's search path), then the toolkit directory
// the build found.
#include "trainer/cuda/cublaslt_library.h"

#include <dlfcn.h>

#include <vector>

#ifndef ABLATE_CUBLASLT_SONAME
#error "ABLATE_CUBLASLT_SONAME must name cuBLASLt's soname (trainer/CMakeLists.txt sets it)"
#endif
#ifndef ABLATE_CUBLASLT_DIR
#define ABLATE_CUBLASLT_DIR ""
#endif

namespace ablate::cuda {
namespace {

// Resolves `name` into `fn`; false when the symbol is missing.
template <class Fn>
bool Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

}  // namespace

Result<std::unique_ptr<CublasLtLibrary>> CublasLtLibrary::Load() {
  std::vector<std::string> candidates = {ABLATE_CUBLASLT_SONAME};
  if (std::string(ABLATE_CUBLASLT_DIR).size() > 0) {
    candidates.push_back(std::string(ABLATE_CUBLASLT_DIR) + "/" + ABLATE_CUBLASLT_SONAME);
  }
  std::unique_ptr<CublasLtLibrary> lib(new CublasLtLibrary());
  std::string tried;
  for (const std::string& path : candidates) {
    lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib->handle_ != nullptr) {
      lib->path_ = path;
      break;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(why != nullptr ? why : path);
  }
  if (lib->handle_ == nullptr) {
    return Error{
        "cannot load cuBLASLt (" + tried + "); put the CUDA toolkit's lib64 on LD_LIBRARY_PATH",
        ""};
  }
  CublasLtApi& a = lib->api_;
  struct Entry {
    const char* name;
    bool ok;
  };
  void* h = lib->handle_;
  const Entry entries[] = {
      {"cublasLtCreate", Resolve(h, "cublasLtCreate", &a.Create)},
      {"cublasLtDestroy", Resolve(h, "cublasLtDestroy", &a.Destroy)},
      {"cublasLtGetVersion", Resolve(h, "cublasLtGetVersion", &a.GetVersion)},
      {"cublasLtMatmulDescCreate", Resolve(h, "cublasLtMatmulDescCreate", &a.MatmulDescCreate)},
      {"cublasLtMatmulDescDestroy", Resolve(h, "cublasLtMatmulDescDestroy", &a.MatmulDescDestroy)},
      {"cublasLtMatmulDescSetAttribute",
       Resolve(h, "cublasLtMatmulDescSetAttribute", &a.MatmulDescSetAttribute)},
      {"cublasLtMatrixLayoutCreate",
       Resolve(h, "cublasLtMatrixLayoutCreate", &a.MatrixLayoutCreate)},
      {"cublasLtMatrixLayoutDestroy",
       Resolve(h, "cublasLtMatrixLayoutDestroy", &a.MatrixLayoutDestroy)},
      {"cublasLtMatrixLayoutSetAttribute",
       Resolve(h, "cublasLtMatrixLayoutSetAttribute", &a.MatrixLayoutSetAttribute)},
      {"cublasLtMatmulPreferenceCreate",
       Resolve(h, "cublasLtMatmulPreferenceCreate", &a.MatmulPreferenceCreate)},
      {"cublasLtMatmulPreferenceDestroy",
       Resolve(h, "cublasLtMatmulPreferenceDestroy", &a.MatmulPreferenceDestroy)},
      {"cublasLtMatmulPreferenceSetAttribute",
       Resolve(h, "cublasLtMatmulPreferenceSetAttribute", &a.MatmulPreferenceSetAttribute)},
      {"cublasLtMatmulAlgoGetHeuristic",
       Resolve(h, "cublasLtMatmulAlgoGetHeuristic", &a.MatmulAlgoGetHeuristic)},
      {"cublasLtMatmul", Resolve(h, "cublasLtMatmul", &a.Matmul)},
  };
  for (const Entry& e : entries) {
    if (!e.ok) return Error{lib->path_ + " has no symbol " + e.name, ""};
  }
  return lib;
}

CublasLtLibrary::~CublasLtLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace ablate::cuda
