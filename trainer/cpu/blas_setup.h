// Runtime settings that only take effect through the environment, read when OpenBLAS and
// libgomp are loaded, so binaries call TuneCpuRuntime first thing in main.
//
// OpenBLAS picks its kernels when it is loaded. On CPUs it does not recognise (virtualised
// "Intel Xeon Processor" models) the Debian build falls back to its generic SSE3 "Prescott"
// kernels, about 8× slower than its AVX-512 ones on the same machine (30 vs 250 GFLOP/s SGEMM
// on 2 cores). The only switch is the OPENBLAS_CORETYPE environment variable.
//
// The ops' OpenMP team and OpenBLAS's own threads share the cores; OpenMP's default of spinning
// after each parallel loop starves OpenBLAS (measured: 2.7× slower steps on 2 cores), so the
// OpenMP wait policy becomes passive unless the user set one.
#ifndef ABLATE_TRAINER_CPU_BLAS_SETUP_H_
#define ABLATE_TRAINER_CPU_BLAS_SETUP_H_

#include <string>

namespace ablate::cpu {

// The kernel family OpenBLAS is using ("SkylakeX", "Haswell", "Prescott", ...).
std::string BlasCoreName();

// If OpenBLAS chose a generic kernel (and OPENBLAS_CORETYPE is unset) on a CPU with AVX-512 or
// AVX2, sets OPENBLAS_CORETYPE to SkylakeX or Haswell; if OMP_WAIT_POLICY is unset, sets it to
// passive. When anything changed, re-executes the program (same pid, same arguments; a note
// goes to stderr for the kernel switch). Returns normally otherwise.
void TuneCpuRuntime(char** argv);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_BLAS_SETUP_H_
