// The GPU's side of the primitives the mma attention kernels are written against
// (attention_mma_kernels.cuh): thread and block indices, barriers, warp shuffles, cp.async,
// ldmatrix and mma.sync, as inline PTX. tests/trainer/emulated/ provides the same interface on
// the CPU, so the kernels' indexing, masking and pipelining are tested without a GPU.
// Device code only: include from .cu files.
#ifndef ABLATE_TRAINER_CUDA_MMA_PRIMITIVES_CUH_
#define ABLATE_TRAINER_CUDA_MMA_PRIMITIVES_CUH_

#include <cuda_bf16.h>

#include <cstdint>

namespace ablate::cuda {

struct DevicePrimitives {
  __device__ __forceinline__ static int Thread() { return int(threadIdx.x); }
  __device__ __forceinline__ static uint3 Block() { return blockIdx; }

  // The block's dynamic shared memory (the launch's third parameter, 128-byte aligned).
  __device__ __forceinline__ static unsigned char* Smem() {
    extern __shared__ __align__(128) unsigned char dynamic_smem[];
    return dynamic_smem;
  }

  __device__ __forceinline__ static void Sync() { __syncthreads(); }
  // A barrier that also counts the threads whose `pred` is true.
  __device__ __forceinline__ static int SyncCount(bool pred) { return __syncthreads_count(pred); }
  __device__ __forceinline__ static float ShflXor(float v, int lane_mask) {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
  }

  // 16 (4) bytes global → shared without a register round trip; !valid writes zeros and reads
  // nothing. Part of the thread's next committed group.
  __device__ __forceinline__ static void CpAsync16(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SmemAddr(dst)), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
  }
  __device__ __forceinline__ static void CpAsync4(void* dst, const void* src, bool valid) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(SmemAddr(dst)), "l"(src),
                 "r"(valid ? 4 : 0)
                 : "memory");
  }
  __device__ __forceinline__ static void Commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  // Until at most one (none) of the thread's committed groups is in flight.
  __device__ __forceinline__ static void WaitAllButOne() {
    asm volatile("cp.async.wait_group 1;\n" ::: "memory");
  }
  __device__ __forceinline__ static void WaitAll() {
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
  }

  // Four 8×8 bf16 matrices; lane 8i + j gives the address of row j of matrix i, r[i] is the
  // lane's fragment of matrix i (row lane / 4, columns 2·(lane % 4) and + 1; Ldsm4T: the same
  // of the transposed matrix).
  __device__ __forceinline__ static void Ldsm4(uint32_t (&r)[4], const __nv_bfloat16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(SmemAddr(p)));
  }
  __device__ __forceinline__ static void Ldsm4T(uint32_t (&r)[4], const __nv_bfloat16* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(SmemAddr(p)));
  }

  // c (16×8 fp32) += a (16×16 bf16) · b (16×8 bf16), mma.m16n8k16 fragments.
  __device__ __forceinline__ static void Mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                             uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }

 private:
  __device__ __forceinline__ static uint32_t SmemAddr(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
  }
};

}  // namespace ablate::cuda

#endif  // ABLATE_TRAINER_CUDA_MMA_PRIMITIVES_CUH_
