// Data-parallel loops for the CPU ops. OpenMP under the hood: each calling thread (each
// in-process rank) gets its own team, sized by omp_set_num_threads on that thread.
#ifndef ABLATE_TRAINER_CPU_PARALLEL_H_
#define ABLATE_TRAINER_CPU_PARALLEL_H_

#include <cstdint>

namespace ablate::cpu {

// Calls fn(i) for i in [0, n), split statically over the calling thread's team.
// fn must be safe to run concurrently for different i.
template <class Fn>
void ParallelFor(int64_t n, const Fn& fn) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// As ParallelFor, but hands out one i at a time to whichever thread is free: for a few large,
// independent tasks (GEMM blocks, vocabulary chunks), so that a thread the OS preempts on a
// shared machine does not hold the others at the barrier with its whole static share.
template <class Fn>
void ParallelForDynamic(int64_t n, const Fn& fn) {
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

// Sets the op thread count for the calling thread: its OpenMP team, which also splits large GEMMs
// (OpenBLAS itself is set to one thread, process-wide; see matmul.cc).
void SetThreads(int threads);

}  // namespace ablate::cpu

#endif  // ABLATE_TRAINER_CPU_PARALLEL_H_
