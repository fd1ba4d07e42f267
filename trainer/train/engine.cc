// Engine selection. The CUDA backend is compiled only when the build found nvcc
// (ABLATE_HAVE_CUDA); without it, asking for it is an error that says so.
#include "trainer/train/engine.h"

#include "trainer/train/cpu_engine.h"

#if ABLATE_HAVE_CUDA
#include "trainer/cuda/cublaslt_library.h"
#include "trainer/cuda/cuda_context.h"
#include "trainer/cuda/cuda_engine.h"
#endif

namespace ablate {
namespace {

#if !ABLATE_HAVE_CUDA
constexpr const char* kNoCuda =
    "backend cuda: this ablate-train was built without CUDA (nvcc was not found when it was "
    "configured); rebuild on a machine with the CUDA toolkit, or use --backend cpu";
#endif

}  // namespace

Result<std::unique_ptr<Engine>> MakeEngine(const RunPlan& plan, Communicator& comm) {
  if (plan.backend == Backend::kCpu) return std::unique_ptr<Engine>(new CpuEngine(plan, comm));
#if ABLATE_HAVE_CUDA
  return cuda::MakeCudaEngine(plan, comm);
#else
  return Error{kNoCuda, "backend"};
#endif
}

Result<std::string> ProbeCudaDevice(int index) {
#if ABLATE_HAVE_CUDA
  Result<cuda::DeviceInfo> info = cuda::ProbeDevice(index);
  if (!info.ok()) return info.error();
  Result<const cuda::CublasLtLibrary*> lt = cuda::CublasLtLibrary::Shared();
  if (!lt.ok()) return lt.error();  // a GPU without cuBLASLt is refused before any work too
  return info->name;
#else
  (void)index;
  return Error{kNoCuda, "backend"};
#endif
}

}  // namespace ablate
