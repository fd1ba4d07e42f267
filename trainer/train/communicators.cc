// Communicator setup. NCCL is compiled only when the build found nccl.h (ABLATE_HAVE_NCCL) and
// opened at run time; without it, several GPUs are refused with a message that says why.
#include "trainer/train/communicators.h"

#include <cstdlib>

#include "trainer/collectives/in_process_communicator.h"
#include "trainer/collectives/nccl_id.h"

#if ABLATE_HAVE_NCCL
#include "trainer/collectives/nccl_communicator.h"
#include "trainer/collectives/nccl_library.h"
#endif

namespace ablate {
namespace {

class InProcessCommunicators : public Communicators {
 public:
  explicit InProcessCommunicators(int world) : group_(world) {
    for (int r = 0; r < world; ++r) comms_.emplace_back(new InProcessCommunicator(&group_, r));
  }
  Communicator& at(int j) override { return *comms_[size_t(j)]; }

 private:
  InProcessGroup group_;
  std::vector<std::unique_ptr<InProcessCommunicator>> comms_;
};

#if ABLATE_HAVE_NCCL
class NcclCommunicators : public Communicators {
 public:
  ~NcclCommunicators() override { NcclCommunicator::DestroyAll(comms_); }
  Communicator& at(int j) override { return *comms_[size_t(j)]; }

  std::unique_ptr<NcclLibrary> lib;  // declared first: destroyed after the communicators
  std::vector<std::unique_ptr<NcclCommunicator>> comms_;
};

// The group's id: made here on a single node or on node rank 0 (which also writes the file the
// other nodes read), else the one handed over.
Result<std::string> GroupId(const TrainOptions& o, const NcclLibrary& lib) {
  if (o.nnodes == 1 || o.node_rank == 0) {
    Result<std::string> id = lib.NewUniqueId();
    if (!id.ok() || o.nnodes == 1) return id;
    Status s = WriteNcclIdFile(o.nccl_id_file, *id);
    if (!s.ok()) return s.error();
    return id;
  }
  if (!o.nccl_id.empty()) return o.nccl_id;
  return ReadNcclIdFile(o.nccl_id_file, o.nccl_id_wait);
}
#else
constexpr const char* kNoNccl =
    "runs on several GPUs need NCCL, and this ablate-train was built without it (nccl.h was not "
    "found when it was configured); rebuild with NCCL's headers present, or run on one GPU";
#endif

}  // namespace

Status CheckMultiGpu() {
#if ABLATE_HAVE_NCCL
  Result<std::unique_ptr<NcclLibrary>> lib = NcclLibrary::Load();
  if (!lib.ok()) return lib.error();
  return {};
#else
  return Error{kNoNccl, "gpus"};
#endif
}

Result<std::unique_ptr<Communicators>> MakeCommunicators(const TrainOptions& o,
                                                         const RunPlan& plan) {
  if (plan.backend == Backend::kCpu || (o.world_size == 1 && !o.nccl_on_one_gpu)) {
    return std::unique_ptr<Communicators>(new InProcessCommunicators(o.world_size));
  }
#if ABLATE_HAVE_NCCL
  std::unique_ptr<NcclCommunicators> c(new NcclCommunicators());
  Result<std::unique_ptr<NcclLibrary>> lib = NcclLibrary::Load();
  if (!lib.ok()) return lib.error();
  c->lib = std::move(lib).value();
  // Every connection is made inside the joint group init, not lazily by the first collective
  // of each kind (NCCL's default since 2.22): a lazy connect talks to the peers on the calling
  // thread, outside anything an abort reaches, so a peer that failed before its first
  // collective would hang it. A value the user set wins.
  setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
  Result<std::string> id = GroupId(o, *c->lib);
  if (!id.ok()) return id.error();
  auto comms =
      NcclCommunicator::CreateLocal(*c->lib, *id, o.world_size, plan.first_rank, plan.devices,
                                    plan.abort != nullptr ? plan.abort->flag() : nullptr);
  if (!comms.ok()) return comms.error();
  c->comms_ = std::move(comms).value();
  return std::unique_ptr<Communicators>(std::move(c));
#else
  return Error{kNoNccl, "gpus"};
#endif
}

}  // namespace ablate
