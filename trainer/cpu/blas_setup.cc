// See blas_setup.h for why a process restarts itself here.
#include "trainer/cpu/blas_setup.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace ablate::cpu {
namespace {

bool IsGeneric(const std::string& core) {
  return core == "Prescott" || core == "Core2" || core == "Penryn" || core == "Nehalem" ||
         core == "Dunnington" || core == "Atom";
}

}  // namespace

std::string BlasCoreName() {
  const char* name = openblas_get_corename();
  return name == nullptr ? "" : name;
}

void ReexecWithFasterBlasKernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || !IsGeneric(BlasCoreName())) return;
  const char* core = nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    core = "SkylakeX";
  } else if (__builtin_cpu_supports("avx2")) {
    core = "Haswell";
  }
  if (core == nullptr) return;
  std::fprintf(stderr, "note: OpenBLAS chose its generic %s kernels; restarting with "
               "OPENBLAS_CORETYPE=%s\n", BlasCoreName().c_str(), core);
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);  // only returns on failure: carry on with the slow kernels
}

}  // namespace ablate::cpu
