// dlopen of NCCL: the soname first (the loader's search path), then the directory the build
// found it in.
#include "trainer/collectives/nccl_library.h"

#include "trainer/collectives/nccl_check.h"
#include "trainer/collectives/nccl_id.h"

#ifndef ABLATE_NCCL_SONAME
#define ABLATE_NCCL_SONAME "libnccl.so.2"
#endif
#ifndef ABLATE_NCCL_DIR
#define ABLATE_NCCL_DIR ""
#endif

namespace ablate {

static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "nccl_id.h's size must be NCCL's");

Result<std::unique_ptr<NcclLibrary>> NcclLibrary::Load() {
  Result<std::unique_ptr<SharedLibrary>> opened = SharedLibrary::OpenFirst(
      LibraryCandidates(ABLATE_NCCL_SONAME, ABLATE_NCCL_DIR), "NCCL, which runs on several GPUs need",
      "install libnccl2 or put its directory on LD_LIBRARY_PATH");
  if (!opened.ok()) return opened.error();
  std::unique_ptr<NcclLibrary> lib(new NcclLibrary(std::move(opened).value()));
  const SharedLibrary& so = *lib->lib_;
  NcclApi& a = lib->api_;
  for (const Status& s : {
           so.Resolve("ncclGetVersion", &a.GetVersion),
           so.Resolve("ncclGetErrorString", &a.GetErrorString),
           so.Resolve("ncclGetUniqueId", &a.GetUniqueId),
           so.Resolve("ncclCommInitRank", &a.CommInitRank),
           so.Resolve("ncclCommDestroy", &a.CommDestroy),
           so.Resolve("ncclCommAbort", &a.CommAbort),
           so.Resolve("ncclCommGetAsyncError", &a.CommGetAsyncError),
           so.Resolve("ncclAllReduce", &a.AllReduce),
           so.Resolve("ncclReduceScatter", &a.ReduceScatter),
           so.Resolve("ncclAllGather", &a.AllGather),
           so.Resolve("ncclBroadcast", &a.Broadcast),
           so.Resolve("ncclGroupStart", &a.GroupStart),
           so.Resolve("ncclGroupEnd", &a.GroupEnd),
       }) {
    if (!s.ok()) return s.error();
  }
  return lib;
}

std::string NcclLibrary::Version() const {
  int v = 0;
  if (api_.GetVersion(&v) != ncclSuccess) return "unknown";
  // NCCL_VERSION(X, Y, Z) = X·10000 + Y·100 + Z from 2.9 on.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
         std::to_string(v % 100);
}

Result<std::string> NcclLibrary::NewUniqueId() const {
  ncclUniqueId id;
  ABLATE_NCCL_CHECK(api_, api_.GetUniqueId(&id));
  return std::string(id.internal, sizeof id.internal);
}

}  // namespace ablate
