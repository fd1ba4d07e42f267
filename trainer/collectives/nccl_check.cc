// The one translation of NCCL result codes into words.
#include "trainer/collectives/nccl_check.h"

#include <cstring>
#include <string>

namespace ablate {
namespace {

const char* ShortPath(const char* file) {
  const char* p = std::strstr(file, "trainer/");
  return p != nullptr ? p : file;
}

// Spelled out here: the library's own text may be unavailable (NCCL failed to load).
const char* NcclResultName(ncclResult_t code) {
  switch (code) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "unknown ncclResult_t";
  }
}

}  // namespace

Error NcclError(const NcclApi* api, ncclResult_t code, const char* what, const char* file,
                int line) {
  std::string text = api != nullptr && api->GetErrorString != nullptr
                         ? std::string(" (") + api->GetErrorString(code) + ")"
                         : " (" + std::to_string(int(code)) + ")";
  return Error{std::string(what) + ": " + NcclResultName(code) + text + " at " + ShortPath(file) +
                   ":" + std::to_string(line) + "; NCCL_DEBUG=WARN shows NCCL's own account",
               ""};
}

}  // namespace ablate
