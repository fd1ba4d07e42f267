// A CPU emulator for the primitives the mma attention kernels are written against
// (trainer/cuda/attention_mma_kernels.cuh), so that those kernels run here, thread by thread,
// on machines without a GPU. Each thread of a block is a fiber (Boost.Context) on the calling
// thread; blocks run
// one after another. Barriers, warp shuffles, ldmatrix and mma.sync are collective operations
// over the fibers of a block or warp, implemented from the PTX ISA's fragment layouts. cp.async
// copies land at one of the two extremes the GPU allows (CopyLanding): at once, so that a copy
// into a buffer another warp still reads shows, or as late as the waits allow, so that a read
// before its wait shows (it sees stale bytes).
//
// What it checks besides the kernels' arithmetic: every barrier is reached by every thread of
// its scope (else the launch fails, naming the block), and every shared-memory address of
// ldmatrix and cp.async is inside the block's shared memory and 16-byte aligned.
//
// Not thread-safe: one launch at a time per process.
#ifndef ABLATE_TESTS_TRAINER_EMULATED_GPU_EMULATOR_H_
#define ABLATE_TESTS_TRAINER_EMULATED_GPU_EMULATOR_H_

#include <cuda_bf16.h>
#include <vector_types.h>

#include <cstdint>
#include <functional>
#include <string>

namespace ablate::emulated {

// When a cp.async copy writes shared memory: when issued, or at the wait that covers its group.
enum class CopyLanding { kAtIssue, kAtWait };

// Which thread runs next: each in turn (warps move in near lockstep), or always the lowest
// that can (warp 0 runs ahead to the next block barrier before the others start: a warp that
// overwrites shared memory another still needs shows).
enum class Schedule { kRoundRobin, kLowestFirst };

struct EmulationMode {
  CopyLanding landing = CopyLanding::kAtIssue;
  Schedule schedule = Schedule::kRoundRobin;
};

// Runs `kernel` on every thread (`threads`, a multiple of 32) of every block of `grid`, with
// `smem_bytes` of dynamic shared memory per block (filled with stale bytes, never zeros).
// Returns "" or what went wrong.
std::string Launch(dim3 grid, int threads, int smem_bytes, const std::function<void()>& kernel,
                   EmulationMode mode = {});

// The primitives policy (same interface as cuda::DevicePrimitives).
struct EmulatedPrimitives {
  static int Thread();
  static uint3 Block();
  static unsigned char* Smem();
  static void Sync();
  static int SyncCount(bool pred);
  static float ShflXor(float v, int lane_mask);
  static void CpAsync16(void* dst, const void* src, bool valid);
  static void CpAsync4(void* dst, const void* src, bool valid);
  static void Commit();
  static void WaitAllButOne();
  static void WaitAll();
  static void Ldsm4(uint32_t (&r)[4], const __nv_bfloat16* p);
  static void Ldsm4T(uint32_t (&r)[4], const __nv_bfloat16* p);
  static void Mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);
};

}  // namespace ablate::emulated

#endif  // ABLATE_TESTS_TRAINER_EMULATED_GPU_EMULATOR_H_
