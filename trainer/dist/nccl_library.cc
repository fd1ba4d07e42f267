// dlopen of NCCL: the soname first (the loader's search path), then the directory the build
// found it in.
#include "trainer/dist/nccl_library.h"

#include <dlfcn.h>

#include <vector>

#include "trainer/dist/nccl_check.h"
#include "trainer/dist/nccl_id.h"

#ifndef ABLATE_NCCL_SONAME
#define ABLATE_NCCL_SONAME "libnccl.so.2"
#endif
#ifndef ABLATE_NCCL_DIR
#define ABLATE_NCCL_DIR ""
#endif

namespace ablate {
namespace {

template <class Fn>
bool Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  return *fn != nullptr;
}

static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "nccl_id.h's size must be NCCL's");

}  // namespace

Result<std::unique_ptr<NcclLibrary>> NcclLibrary::Load() {
  std::vector<std::string> candidates = {ABLATE_NCCL_SONAME};
  if (std::string(ABLATE_NCCL_DIR).size() > 0) {
    candidates.push_back(std::string(ABLATE_NCCL_DIR) + "/" + ABLATE_NCCL_SONAME);
  }
  std::unique_ptr<NcclLibrary> lib(new NcclLibrary());
  std::string tried;
  for (const std::string& path : candidates) {
    lib->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib->handle_ != nullptr) {
      lib->path_ = path;
      break;
    }
    const char* why = dlerror();
    tried += (tried.empty() ? "" : "; ") + std::string(why != nullptr ? why : path);
  }
  if (lib->handle_ == nullptr) {
    return Error{"cannot load NCCL, which runs on several GPUs need (" + tried +
                     "); install libnccl2 or put its directory on LD_LIBRARY_PATH",
                 ""};
  }
  NcclApi& a = lib->api_;
  void* h = lib->handle_;
  struct Entry {
    const char* name;
    bool ok;
  };
  const Entry entries[] = {
      {"ncclGetVersion", Resolve(h, "ncclGetVersion", &a.GetVersion)},
      {"ncclGetErrorString", Resolve(h, "ncclGetErrorString", &a.GetErrorString)},
      {"ncclGetUniqueId", Resolve(h, "ncclGetUniqueId", &a.GetUniqueId)},
      {"ncclCommInitRank", Resolve(h, "ncclCommInitRank", &a.CommInitRank)},
      {"ncclCommDestroy", Resolve(h, "ncclCommDestroy", &a.CommDestroy)},
      {"ncclCommAbort", Resolve(h, "ncclCommAbort", &a.CommAbort)},
      {"ncclCommGetAsyncError", Resolve(h, "ncclCommGetAsyncError", &a.CommGetAsyncError)},
      {"ncclAllReduce", Resolve(h, "ncclAllReduce", &a.AllReduce)},
      {"ncclReduceScatter", Resolve(h, "ncclReduceScatter", &a.ReduceScatter)},
      {"ncclAllGather", Resolve(h, "ncclAllGather", &a.AllGather)},
      {"ncclBroadcast", Resolve(h, "ncclBroadcast", &a.Broadcast)},
      {"ncclGroupStart", Resolve(h, "ncclGroupStart", &a.GroupStart)},
      {"ncclGroupEnd", Resolve(h, "ncclGroupEnd", &a.GroupEnd)},
  };
  for (const Entry& e : entries) {
    if (!e.ok) return Error{lib->path_ + " has no symbol " + e.name, ""};
  }
  return lib;
}

NcclLibrary::~NcclLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
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
