// The communicators of this process's ranks: in-process on the CPU and on one GPU, NCCL across
// GPUs and nodes (with the NCCL id handed over as TrainOptions says). Internal to trainer/train.
#ifndef ABLATE_TRAINER_TRAIN_COMMUNICATORS_H_
#define ABLATE_TRAINER_TRAIN_COMMUNICATORS_H_

#include <memory>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/collectives/communicator.h"
#include "trainer/train/run_plan.h"
#include "trainer/train/trainer.h"

namespace ablate {

// Owns the group state and one communicator per local rank. Destroy after the rank threads
// have finished.
class Communicators {
 public:
  virtual ~Communicators() = default;
  // Local rank j (global rank plan.first_rank + j).
  virtual Communicator& at(int j) = 0;
};

// Whether runs on several GPUs can work in this build: an error naming what is missing (a build
// without NCCL, libnccl not loadable). Cheap; for validation before any work.
Status CheckMultiGpu();

// For o.world_size ranks, this process's share (plan.devices.size() of them on backend cuda,
// all of them on the CPU). Backend cuda with several ranks joins the NCCL group, which blocks
// until every node has joined; node rank 0 first writes o.nccl_id_file. Errors: NCCL's, the id
// file's.
Result<std::unique_ptr<Communicators>> MakeCommunicators(const TrainOptions& o,
                                                         const RunPlan& plan);

}  // namespace ablate

#endif  // ABLATE_TRAINER_TRAIN_COMMUNICATORS_H_
