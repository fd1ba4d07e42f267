// OpenBLAS picks its kernels when it is loaded. On CPUs it does not recognise (virtualised
// "Intel Xeon Processor" models) the Debian build falls back to its generic SSE3 "Prescott"
// kernels, about 8× slower than its AVX-512 ones on the same machine (30 vs 250 GFLOP/s SGEMM
// on 2 cores). The only switch is the OPENBLAS_CORETYPE environment variable, read at load time,
// so binaries call this first thing in main.
#ifndef ABLATE_TRAINER_CPU_BLAS_SETUP_H_
#define ABLATE_TRAINER_CPU_BLAS_SETUP_H_

#include <string>

namespace ablate::cpu {

// The kernel family OpenBLAS is using ("SkylakeX", "Haswell", "Prescott", ...).
std::string BlasCoreName();

// If OpenBLAS chose a generic kernel, OPENBLAS_CORETYPE is unset, and the CPU supports AVX-512
// (or AVX2), sets OPENBLAS_CORETYPE to SkylakeX (or Haswell) and re-executes the program
// (same pid, same arguments; a note goes to stderr). Returns normally otherwise.
void ReexecWithFasterBlasKernels(char** argv);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_BLAS_SETUP_H_
