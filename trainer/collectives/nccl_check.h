// NCCL errors become Status here, and only here (STYLE: "NcclError"). Every call into NCCL goes
// through ABLATE_NCCL_CHECK(api, call), which returns an Error naming the call, NCCL's result
// name and text, and file:line.
#ifndef ABLATE_TRAINER_COLLECTIVES_NCCL_CHECK_H_
#define ABLATE_TRAINER_COLLECTIVES_NCCL_CHECK_H_

#include <nccl.h>

#include "trainer/config/result.h"
#include "trainer/collectives/nccl_library.h"

namespace ablate {

// "<what>: ncclUnhandledCudaError (unhandled cuda error ...) at trainer/collectives/x.cc:12".
// api may be null (the text is then NCCL-free).
Error NcclError(const NcclApi* api, ncclResult_t code, const char* what, const char* file,
                int line);

// Ok for ncclSuccess, else NcclError(...).
inline Status NcclStatus(const NcclApi* api, ncclResult_t code, const char* what,
                         const char* file, int line) {
  if (code == ncclSuccess) return {};
  return NcclError(api, code, what, file, line);
}

}  // namespace ablate

// Returns the Error from the enclosing function (which returns Status or Result<T>).
#define ABLATE_NCCL_CHECK(api, ...)                                                          \
  do {                                                                                       \
    const ncclResult_t ablate_nccl_code_ = (__VA_ARGS__);                                    \
    if (ablate_nccl_code_ != ncclSuccess) {                                                  \
      return ::ablate::NcclError(&(api), ablate_nccl_code_, #__VA_ARGS__, __FILE__, __LINE__); \
    }                                                                                        \
  } while (0)

#endif  // ABLATE_TRAINER_COLLECTIVES_NCCL_CHECK_H_
