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

const char* FasterCoreType() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || !IsGeneric(BlasCoreName())) return nullptr;
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
  if (__builtin_cpu_supports("avx2")) return "Haswell";
  return nullptr;
}

void TuneCpuRuntime(char** argv) {
  bool changed = false;
  if (const char* core = FasterCoreType()) {
    std::fprintf(stderr, "note: OpenBLAS chose its generic %s kernels; restarting with "
                 "OPENBLAS_CORETYPE=%s\n", BlasCoreName().c_str(), core);
    setenv("OPENBLAS_CORETYPE", core, 1);
    changed = true;
  }
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "passive", 1);
    changed = true;
  }
  if (changed) execv("/proc/self/exe", argv);  // returns only on failure: carry on as we are
}

}  // namespace ablate::cpu
