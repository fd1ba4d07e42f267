// NCCL, opened at run time (dlopen) like cuBLASLt (trainer/cuda/cublaslt_library.h): ablate-train
// starts, and runs on the CPU or on one GPU, on machines without libnccl; only a run on several
// GPUs needs it. The soname and a fallback directory (where the build found libnccl) are
// compiled in; see trainer/CMakeLists.txt.
#ifndef ABLATE_TRAINER_COLLECTIVES_NCCL_LIBRARY_H_
#define ABLATE_TRAINER_COLLECTIVES_NCCL_LIBRARY_H_

#include <nccl.h>

#include <memory>
#include <string>

#include "trainer/config/result.h"
#include "trainer/sys/shared_library.h"

namespace ablate {

// The NCCL entry points the trainer uses, with the library's own signatures.
struct NcclApi {
  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclCommInitRank) CommInitRank = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclCommAbort) CommAbort = nullptr;
  decltype(&ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclBroadcast) Broadcast = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
};

// An opened NCCL. Thread-safe once loaded (the table is read-only); closes on destruction, which
// must come after every communicator made with it is destroyed.
class NcclLibrary {
 public:
  // Error: which file could not be opened (dlerror's words) or which symbol is missing.
  static Result<std::unique_ptr<NcclLibrary>> Load();

  const NcclApi& api() const { return api_; }
  const std::string& path() const { return lib_->path(); }
  // "2.28.3".
  std::string Version() const;
  // A fresh unique id (kNcclIdBytes bytes). NCCL's bootstrap root starts listening in this
  // process, so the process that creates the id must stay alive until every rank has joined:
  // node rank 0's trainer makes it, never a helper process.
  Result<std::string> NewUniqueId() const;

 private:
  explicit NcclLibrary(std::unique_ptr<SharedLibrary> lib) : lib_(std::move(lib)) {}
  std::unique_ptr<SharedLibrary> lib_;
  NcclApi api_;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_COLLECTIVES_NCCL_LIBRARY_H_
