// The one translation of CUDA runtime and cuBLAS error codes into words.
#include "trainer/cuda/cuda_check.h"

#include <cstring>
#include <string>

namespace ablate::cuda {
namespace {

// "trainer/cuda/x.cc" from an absolute __FILE__, so messages do not carry the build machine.
const char* ShortPath(const char* file) {
  const char* p = std::strstr(file, "trainer/");
  return p != nullptr ? p : file;
}

// cuBLASLt is loaded at run time (cublaslt_library.h), so its own status-name function may be
// unavailable exactly when an error has to be reported; the names are spelled out here.
const char* CublasStatusName(cublasStatus_t code) {
  switch (code) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "unknown cublasStatus_t";
}

}  // namespace

Error CudaError(cudaError_t code, const char* what, const char* file, int line) {
  return Error{std::string(what) + ": " + cudaGetErrorName(code) + " (" + cudaGetErrorString(code) +
                   ") at " + ShortPath(file) + ":" + std::to_string(line),
               ""};
}

Error CublasError(cublasStatus_t code, const char* what, const char* file, int line) {
  return Error{std::string(what) + ": " + CublasStatusName(code) + " (" +
                   std::to_string(int(code)) + ") at " + ShortPath(file) + ":" +
                   std::to_string(line),
               ""};
}

}  // namespace ablate::cuda
