// See blas_setup.h for why a process restarts itself here.
#include "trainer/cpu/blas_setup.h"

#include <cblas.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ablate::cpu {
namespace {

bool IsGeneric(const std::string& core) {
  return core == "Prescott" || core == "Core2" || core == "Penryn" || core == "Nehalem" ||
         core == "Dunnington" || core == "Atom";
}

// Executes this program again with the same arguments. Started through the release bundle's
// loader (bin/ld-linux-x86-64.so.2 PROGRAM ARGS..., scripts/dist.sh), /proc/self/exe is that
// loader, which must be given the program (argv[0], its path) again.
void Restart(char** argv) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    const char* base = std::strrchr(exe, '/');
    if (std::strncmp(base != nullptr ? base + 1 : exe, "ld-linux", 8) == 0) {
      std::vector<char*> args = {exe};
      for (char** a = argv; *a != nullptr; ++a) args.push_back(*a);
      args.push_back(nullptr);
      execv(exe, args.data());
      return;
    }
  }
  execv("/proc/self/exe", argv);
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
  if (changed) Restart(argv);  // returns only on failure: carry on as we are
}

}  // namespace ablate::cpu
