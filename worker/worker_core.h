// The worker's brain, free of gRPC: turns Assignments into supervised trainer children, their
// points into batches in the outbox, acknowledgements into outbox trims, Cancels into signals, and
// pushes every unacknowledged outbox entry, in order, to whatever connection is current.
// A multi-node attempt's points are sent by its node 0's worker only; the other nodes' workers
// send RunStarted and RunFinished but no MetricBatch (the trainers' points are the same).
#ifndef ABLATE_WORKER_WORKER_CORE_H_
#define ABLATE_WORKER_WORKER_CORE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "ablate/v1/worker.pb.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "worker/batcher.h"
#include "worker/outbox.h"
#include "worker/run_supervisor.h"
#include "worker/script_launch.h"

namespace ablate::worker {

// The connection to the coordinator as the core sees it. Implementations are thread-safe.
class MessageSink {
 public:
  virtual ~MessageSink() = default;
  // Identifies the current connection (after its Welcome); 0 while disconnected. Changes at every
  // reconnection, so a sender can tell that what it sent earlier may need sending again.
  virtual uint64_t Generation() = 0;
  // Writes `message` on connection `generation`; false when that connection is gone.
  virtual bool Send(const v1::WorkerMessage& message, uint64_t generation) = 0;
};

// Writes one line to stderr, prefixed "ablate-worker: ". Thread-safe.
void LogLine(std::string_view line);

struct WorkerCoreOptions {
  std::string work_dir;      // runs/ and outbox/ live here
  std::string data_dir;      // datasets (see datasets.h)
  std::string trainer_path;  // absolute path of ablate-train
  std::vector<std::string> trainer_args;  // appended to every trainer command line
  BatcherOptions batcher;
  std::chrono::milliseconds tick{100};     // how often due batches are flushed and sent
  std::chrono::milliseconds shutdown_grace{10000};
  const Clock* clock = &SystemClock::Get();  // its MonotonicMs; not owned
  // Unacknowledged outbox entries are sent again on the same stream after this long without an
  // Ack that advances (DESIGN §4, the ack contract), the wait doubling up to 30 s each time.
  std::chrono::milliseconds resend_after{2000};
  // Script runs (issue 14; worker_core_scripts.cc). Without allow_scripts every script
  // assignment fails at once, saying so.
  bool allow_scripts = false;
  std::string python = "python3";  // interpreter for launch: python / torchrun and {python}
  std::string master_addr;         // this node's address for torch rendezvous ("" = host name)
  SnapshotCache::Fetch fetch_snapshot;  // a snapshot by hash from the coordinator
  // Checkpoints (issue 17; checkpoint_dir.h): where built-in trainer runs of a sweep with
  // checkpoint_every keep them (run-<run_id>/ below it), shared storage on a cluster so that a
  // requeued run resumes on any worker. "": such sweeps run without checkpoints (logged).
  std::string checkpoint_dir;
};

// Thread-safe. Handle* methods are called by the connection's reader; callbacks of the children
// arrive on supervisor threads; a pump thread flushes due batches every `tick`.
class WorkerCore {
 public:
  // Opens WORK/outbox (loading what a previous process left unacknowledged) and starts the pump.
  // Errors from the outbox (file system).
  static absl::StatusOr<std::unique_ptr<WorkerCore>> Create(WorkerCoreOptions options,
                                                            MessageSink* sink);
  ~WorkerCore();  // Shutdown() if not done

  void HandleAssignment(const v1::Assignment& assignment);
  // A script run's Assignment (its config names a script): the snapshot is fetched (or taken
  // from WORK/snapshots), unpacked into the run folder and launched on a thread of its own, node
  // 1.. of a gang once node 0's rendezvous has been relayed.
  void HandleScriptAssignment(const v1::Assignment& assignment);
  void HandleAck(const v1::Ack& ack);
  // A running attempt gets SIGTERM, then SIGKILL after grace_ms. An attempt that is no longer
  // running has had its writes refused: its outbox entries are dropped.
  void HandleCancel(const v1::Cancel& cancel);
  // A multi-node attempt's NCCL id, relayed from its node 0: written where this node's trainer
  // waits for it (nccl_handoff.h); kept until the Assignment when it comes first.
  void HandleNcclId(const v1::NcclId& id);
  // Welcome.stale_attempt_ids: those children are stopped and their outbox entries dropped.
  void HandleStale(const std::vector<int64_t>& attempt_ids);
  // Attempts whose trainer is still running (Hello.running), with their GPUs and node.
  std::vector<v1::HeldAttempt> Held() const;
  // Sends every outbox entry not yet sent on the current connection. Called after a (re)connect.
  void SendPending();

  // Stops accepting work, SIGTERMs every child, waits up to shutdown_grace for them (SIGKILL
  // after it), records their RunFinished and sends what it can. Idempotent.
  void Shutdown();
  size_t running() const;

  // Stopping for good (SIGTERM: scancel, preemption, shutdown; worker_release.cc): sends one
  // Release with every attempt still running, so the coordinator requeues them at once without
  // charge, and takes no new runs. Call before Shutdown(), while the stream is still open.
  // Returns how many attempts were released; nothing is sent when there are none or when
  // disconnected (the lease then requeues them).
  size_t ReleaseAll(const std::string& reason);
  // Takes no new runs from now on (USR1): an Assignment that still arrives ends at once as
  // "cancelled" (requeued, not charged). Heartbeats say so (Heartbeat.draining).
  void Drain();
  bool draining() const;

  // A full disk (worker_core_disk.cc): an attempt whose run folder or outbox records no longer
  // fit cannot be supervised, so its trainer is stopped and the attempt is given back with a
  // Release naming the full disk (the coordinator requeues the run without charging it: an
  // infrastructure failure, like a lost worker). Assignments that arrive meanwhile are given back
  // the same way. The stream, the heartbeats and the other attempts' outbox entries stay; the
  // heartbeats say "draining" until a probe write in the work dir fits again (TakesNoRuns).
  bool disk_full() const;
  // What heartbeats say (Heartbeat.draining): draining() or disk_full().
  bool TakesNoRuns() const { return draining() || disk_full(); }
  // Nothing running and nothing left in the outbox to deliver.
  bool Idle() const;

 private:
  struct Attempt;
  WorkerCore(WorkerCoreOptions options, MessageSink* sink, std::unique_ptr<Outbox> outbox);
  void OnPoint(Attempt& a, const v1::MetricPoint& point);
  void OnExit(Attempt& a, const RunResult& result);
  void AppendBatch(Attempt& a, std::vector<v1::MetricPoint> points);
  absl::Status AppendFinished(const v1::RunFinished& finished);
  RunSpec SpecFor(const v1::Assignment& assignment) const;
  // --checkpoint-dir/--checkpoint-every/--resume for the attempt (none when the sweep asks for
  // no checkpoints or the worker has no checkpoint_dir), with a log line saying what it does.
  std::vector<std::string> CheckpointArgs(const v1::Assignment& assignment) const;
  void OnResumed(Attempt& a, int64_t step, const std::string& path);
  void FailToStart(const v1::Assignment& assignment, const absl::Status& why,
                   const std::string& status = "failed");
  void Pump();
  void FlushDueAndReap();
  // Node rank 0 of multi-node attempts: sends each NcclId once its trainer has written it.
  void RelayNcclIds();
  void SendStarted(const Attempt& a);
  void Record(const absl::Status& s);
  // Full disk (worker_core_disk.cc). GiveBack only queues (any lock may be held); the pump
  // stops the trainer, sends the Release and drops the attempt's outbox (SendGiveBacks).
  void GiveBack(const v1::Assignment& as, const absl::Status& why);
  bool GiveBackIfDiskFull(const v1::Assignment& as);
  // A start or a trainer that failed while the disk is full: given back, true.
  bool GiveBackIfNoSpace(const v1::Assignment& as, const absl::Status& why);
  void SendGiveBacks();
  void ProbeDisk();
  // Script runs (worker_core_scripts.cc).
  void StartScript(Attempt& a);
  absl::StatusOr<RunSpec> PrepareScript(Attempt& a);
  bool WaitForRendezvous(Attempt& a);
  bool CancelStarting(const v1::Cancel& cancel);
  void EndUnstarted(const v1::Assignment& as, const std::string& status, const std::string& error);
  std::optional<v1::NcclId> ScriptRendezvous(const Attempt& a) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const WorkerCoreOptions options_;
  MessageSink* const sink_;
  const std::unique_ptr<Outbox> outbox_;
  SnapshotCache snapshots_;

  mutable absl::Mutex mu_;
  std::map<int64_t, std::shared_ptr<Attempt>> attempts_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool pump_stop_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, v1::NcclId> early_ids_ ABSL_GUARDED_BY(mu_);  // attempt -> id

  // How far each attempt's outbox entries went on the current connection.
  struct Delivery {
    int64_t sent_upto = 0;  // highest seq sent on this connection; 0: none yet
    int64_t acked = 0;      // highest seq acknowledged
    int64_t progress_ms = 0;  // when an Ack last advanced, or the oldest unacked entry went
    int64_t resend_after_ms = 0;
  };
  static constexpr int64_t kMaxResendAfterMs = 30000;

  absl::Mutex send_mu_ ABSL_ACQUIRED_AFTER(mu_);
  uint64_t sent_generation_ ABSL_GUARDED_BY(send_mu_) = 0;
  std::map<int64_t, Delivery> delivery_ ABSL_GUARDED_BY(send_mu_);  // by attempt id
  // Whether the attempt's unacknowledged entries are due to be sent again (worker_core.cc).
  bool ResendDue(int64_t attempt_id, Delivery& d, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(send_mu_);

  struct GiveBackEntry {
    int64_t attempt_id = 0;
    int64_t fencing_token = 0;
    std::string reason;
  };
  // A leaf lock: taken under any of the others, never the other way round.
  mutable absl::Mutex disk_mu_ ABSL_ACQUIRED_AFTER(send_mu_);
  bool disk_full_ ABSL_GUARDED_BY(disk_mu_) = false;
  int64_t next_probe_ms_ ABSL_GUARDED_BY(disk_mu_) = 0;
  std::string disk_reason_ ABSL_GUARDED_BY(disk_mu_);
  std::vector<GiveBackEntry> give_backs_ ABSL_GUARDED_BY(disk_mu_);

  std::thread pump_;
};

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_WORKER_CORE_H_
