// CUDA runtime and cuBLAS errors become Status here, and only here (STYLE: "CudaError"). Every
// call into CUDA or cuBLASLt goes through ABLATE_CUDA_CHECK / ABLATE_CUBLAS_CHECK, which return
// an Error naming the call, the library's error name and text, and file:line. Kernel launches
// are followed by ABLATE_CUDA_LAUNCH_CHECK("kernel name"); note that a launch check also reports
// an earlier asynchronous failure (CUDA errors are sticky), so the name is where it was seen.
#ifndef ABLATE_TRAINER_CUDA_CUDA_CHECK_H_
#define ABLATE_TRAINER_CUDA_CUDA_CHECK_H_

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "trainer/config/result.h"

namespace ablate::cuda {

// "<what>: cudaErrorMemoryAllocation (out of memory) at trainer/cuda/x.cc:12".
Error CudaError(cudaError_t code, const char* what, const char* file, int line);

// "<what>: CUBLAS_STATUS_NOT_SUPPORTED at trainer/cuda/x.cc:12".
Error CublasError(cublasStatus_t code, const char* what, const char* file, int line);

}  // namespace ablate::cuda

// Returns the Error from the enclosing function (which returns Status or Result<T>).
// Variadic so that template arguments with commas need no extra parentheses.
#define ABLATE_CUDA_CHECK(...)                                                               \
  do {                                                                                       \
    const cudaError_t ablate_cuda_code_ = (__VA_ARGS__);                                     \
    if (ablate_cuda_code_ != cudaSuccess) {                                                  \
      return ::ablate::cuda::CudaError(ablate_cuda_code_, #__VA_ARGS__, __FILE__, __LINE__); \
    }                                                                                        \
  } while (0)

#define ABLATE_CUBLAS_CHECK(...)                                                                 \
  do {                                                                                           \
    const cublasStatus_t ablate_cublas_code_ = (__VA_ARGS__);                                    \
    if (ablate_cublas_code_ != CUBLAS_STATUS_SUCCESS) {                                          \
      return ::ablate::cuda::CublasError(ablate_cublas_code_, #__VA_ARGS__, __FILE__, __LINE__); \
    }                                                                                            \
  } while (0)

// After a <<<...>>> launch: the launch's configuration error, or an earlier sticky one.
#define ABLATE_CUDA_LAUNCH_CHECK(kernel_name)                                                 \
  do {                                                                                        \
    const cudaError_t ablate_cuda_code_ = cudaGetLastError();                                 \
    if (ablate_cuda_code_ != cudaSuccess) {                                                   \
      return ::ablate::cuda::CudaError(ablate_cuda_code_, "launch of " kernel_name, __FILE__, \
                                       __LINE__);                                             \
    }                                                                                         \
  } while (0)

#endif  // ABLATE_TRAINER_CUDA_CUDA_CHECK_H_
