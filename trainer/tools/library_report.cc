// `ablate-train --libraries`: the CUDA pieces this build of ablate-train would load, asked of the
// same loaders a run uses (trainer/cuda/cublaslt_library.h, trainer/collectives/nccl_library.h).
#include "trainer/tools/library_report.h"

#include <dlfcn.h>

#include <nlohmann/json.hpp>

#if ABLATE_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "trainer/cuda/cublaslt_library.h"
#endif
#if ABLATE_HAVE_NCCL
#include "trainer/collectives/nccl_library.h"
#endif

namespace ablate {
namespace {

using J = nlohmann::json;

// The file a resolved entry point lives in: the loaded library's real path, whichever candidate
// (soname on the search path, or the fallback directory) it came through.
[[maybe_unused]] std::string FileOf(const void* symbol, const std::string& fallback) {
  Dl_info info{};
  if (symbol != nullptr && dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) {
    return info.dli_fname;
  }
  return fallback;
}

[[maybe_unused]] std::string CudaVersionText(int v) {  // 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

J CudaReport() {
#if ABLATE_HAVE_CUDA
  int driver = 0;
  J cuda = {{"built", CudaVersionText(CUDART_VERSION)}, {"driver", nullptr}};
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    cuda["driver"] = CudaVersionText(driver);
  }
  return cuda;
#else
  return nullptr;
#endif
}

J CublasLtReport() {
#if ABLATE_HAVE_CUDA
  auto lib = cuda::CublasLtLibrary::Shared();
  if (!lib.ok()) return {{"found", false}, {"error", lib.error().message}};
  const void* fn = reinterpret_cast<const void*>((*lib)->api().Create);
  return {{"found", true}, {"path", FileOf(fn, (*lib)->path())}};
#else
  return nullptr;
#endif
}

J NcclReport() {
#if ABLATE_HAVE_NCCL
  auto lib = NcclLibrary::Load();
  if (!lib.ok()) return {{"found", false}, {"error", lib.error().message}};
  const void* fn = reinterpret_cast<const void*>((*lib)->api().GetVersion);
  return {{"found", true}, {"path", FileOf(fn, (*lib)->path())}, {"version", (*lib)->Version()}};
#else
  return nullptr;
#endif
}

}  // namespace

std::string LibraryReportJson() {
  J backends = J::array({"cpu"});
#if ABLATE_HAVE_CUDA
  backends.push_back("cuda");
#endif
  J out = {{"backends", backends},
           {"cuda", CudaReport()},
           {"cublaslt", CublasLtReport()},
           {"nccl", NcclReport()}};
  return out.dump();
}

}  // namespace ablate
