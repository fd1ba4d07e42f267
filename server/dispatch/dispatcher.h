// The coordinator's side of the worker protocol (proto/ablate/v1/worker.proto): which workers are
// connected, what they hold, leases, and the scheduling loop that turns queued runs into
// assignments. Placement itself is the pure PlanAssignments (server/core/placement.h); durable
// state is the Store; this class holds only what can be rebuilt after a restart (workers
// reconnect and announce their attempts).
//
// Multi-node (gang) attempts: one attempt, one fencing token, one share per node (see
// LiveAttempt). Node 0's RunFinished is authoritative for the run's result and summary; an "ok"
// from any other node only frees that node's share. Any other result from any node ends the
// attempt (if not already ended) with that node's status ("failed"/"nan" count against
// max_attempts, "cancelled" requeues without counting, as for one node) and an error naming
// the node ("node 1 of 2 (worker w-b): ..."); a node lost with its lease loses the attempt.
// Either way every other node still holding a share gets Cancel: its trainer would otherwise
// wait forever in NCCL collectives for the dead peer. Only node 0's worker sends metric
// batches (worker/worker_core.h); another node's are acknowledged and not stored.
//
// After a coordinator restart the store names only node 0's worker. Start() restores node 0's
// share; every node is known again from its Hello (HeldAttempt.node_rank/num_nodes), checked
// against the store (current, unfinished attempt, same fencing token, rank 0 only on the store's
// worker) and against the nodes already known. A gang whose node 0 does not come back within
// restart_grace_ms + lease_ms is lost, and the nodes that did come back are cancelled.
//
// Thread-safe. gRPC stream handlers call Register/On*/Unregister from their own threads; the
// dispatcher's loop thread schedules and expires leases.
#ifndef ABLATE_SERVER_DISPATCH_DISPATCHER_H_
#define ABLATE_SERVER_DISPATCH_DISPATCHER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ablate/v1/worker.pb.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/core/change_feed.h"
#include "server/core/placement.h"
#include "server/dispatch/seed_sequencer.h"
#include "server/store/store.h"

namespace ablate {

// The outbound half of one worker's stream. Send returns false once the stream is gone.
class WorkerSession {
 public:
  virtual ~WorkerSession() = default;
  virtual bool Send(const v1::CoordinatorMessage& msg) = 0;
};

// A worker's place in an attempt: node `rank` of `num_nodes` (0 of 1 for a single-node run).
struct GangNode {
  // A result that outlived its share (the coordinator restarted, or an acknowledged result was
  // sent again) from a worker that is not the attempt's node 0: which node it was is not known.
  static constexpr int kUnknownRank = -1;
  int rank = 0;
  int num_nodes = 1;                                // 0 with kUnknownRank
  bool authoritative() const { return rank == 0; }  // its result is the attempt's
  bool in_gang() const { return num_nodes != 1; }
  bool operator==(const GangNode&) const = default;
};

struct DispatcherOptions {
  int64_t heartbeat_interval_ms = 1000;
  int64_t lease_ms = 10000;        // attempts are lost after this long without a heartbeat
  int64_t cancel_grace_ms = 10000;  // SIGTERM -> SIGKILL
  int64_t tick_ms = 500;            // scheduling / lease check period when nothing happens
  // After a coordinator restart, workers may be deep in their reconnect backoff (up to 10 s);
  // attempts restored from the store get this much longer than a lease to come back.
  int64_t restart_grace_ms = 15000;
  // Its WallMs (ms since the epoch) is the dispatcher's "now": leases, heartbeats, allocation
  // ends. Not owned; must outlive the dispatcher.
  const Clock* clock = &SystemClock::Get();
};

class Dispatcher {
 public:
  // `store` and `feed` must outlive the dispatcher.
  Dispatcher(Store* store, ChangeFeed* feed, DispatcherOptions options);
  ~Dispatcher();  // Stop()

  // Loads the attempts the store says are live (assigned or running), so that their workers
  // get a lease period to reconnect after a coordinator restart, and starts the loop thread.
  absl::Status Start();
  void Stop();

  // A worker said Hello on a new stream. Replaces an older session of the same worker id.
  // Sends the Welcome (with the held attempts that are no longer current) on `session` before the
  // session becomes visible to the scheduler, so that it is always the stream's first message,
  // and returns it. UNAVAILABLE when the stream is already gone.
  absl::StatusOr<v1::Welcome> Register(const v1::Hello& hello,
                                       std::shared_ptr<WorkerSession> session);
  // The stream of `session` ended (the worker keeps its attempts until its lease runs out).
  void Unregister(const std::string& worker_id, const WorkerSession* session);

  void OnHeartbeat(const std::string& worker_id);
  // The worker's valid datasets changed mid-connection: stored, and scheduling uses the new list.
  void OnDatasets(const std::string& worker_id, std::vector<std::string> datasets);
  void OnRunStarted(const std::string& worker_id, const v1::RunStarted& msg);
  // Commits a metric batch. The reply is Ack(p) for the attempt's committed prefix p (every batch
  // with seq <= p is committed; a batch that failed to commit holds p back until the worker
  // sends it again), plus a Cancel when the attempt is stale or not the worker's. Nothing when
  // the store failed (the worker resends).
  std::vector<v1::CoordinatorMessage> OnMetrics(const std::string& worker_id,
                                                const v1::MetricBatch& msg);
  // OnMetrics without waiting for the store (issue 28): `reply` gets what OnMetrics would have
  // returned, on this thread for a batch refused before the store, else on the store's writer
  // thread once the group commit holding the batch ended (keep it short: queue the messages).
  void OnMetricsAsync(const std::string& worker_id, const v1::MetricBatch& msg,
                      std::function<void(std::vector<v1::CoordinatorMessage>)> reply);
  // Ends the attempt, or for a gang only this node's share (the rules above). The reply is an
  // Ack with finished = true once handled; nothing when the store failed or when a batch up to
  // msg.last_batch_seq is not committed yet (the worker resends them, then this).
  std::vector<v1::CoordinatorMessage> OnRunFinished(const std::string& worker_id,
                                                    const v1::RunFinished& msg);
  // A message on the worker's stream that could not be parsed (a string field that is not valid
  // UTF-8). When it names an attempt the worker holds (`attempt_id`, `fencing_token` read from
  // its raw fields), the attempt fails with `why`; the reply is an Ack with finished = true and a
  // Cancel carrying the reason, so that the worker drops it instead of resending it forever.
  std::vector<v1::CoordinatorMessage> OnUnparsable(const std::string& worker_id,
                                                   int64_t attempt_id, int64_t fencing_token,
                                                   const std::string& why);
  // Hello checked before anything of it is stored (dispatcher_trust.cc): OK, or
  // INVALID_ARGUMENT naming the field and its limit (ids 1..200 bytes of [A-Za-z0-9._:/@+=_-],
  // text without control or bidi characters, at most 256 datasets, 64 GPUs, 1024 CPU slots,
  // 1024 held attempts).
  static absl::Status CheckHello(const v1::Hello& hello);
  // A dataset list (Hello, Heartbeat): at most 256 names, each an id as above.
  static absl::Status CheckDatasets(const google::protobuf::RepeatedPtrField<std::string>& names);

  // Asks for a scheduling pass soon (a sweep was submitted, capacity changed). Cheap.
  void Kick();

  // Multi-node runs: relays rank 0's NCCL unique id to the other nodes of the attempt.
  void OnNcclId(const std::string& worker_id, const v1::NcclId& msg);

  // Sends Cancel for the live attempts of these runs (after a sweep was cancelled).
  void CancelRuns(const std::vector<int64_t>& run_ids);

  // Run ids each connected worker is executing now (for ListWorkers).
  std::map<std::string, std::vector<int64_t>> RunsByWorker() const;
  // Why queued runs are waiting, from the last scheduling pass.
  std::map<int64_t, std::string> WaitingReasons() const;

  // Pools (issue 15; dispatcher_pools.cc). A worker that sends Release gives its attempts back:
  // each one that is current with that fencing token is requeued at once without charge, and
  // the other nodes of a gang are cancelled.
  void OnRelease(const std::string& worker_id, const v1::Release& msg);
  // Heartbeat.draining: a draining worker is assigned nothing more.
  void OnDraining(const std::string& worker_id, bool draining);
  // What squeue showed at `seen_ms` for `pool`: its allocations that are running, by job id, with
  // their restart count and end time (ms since the epoch, 0 unknown). Every worker of the pool
  // that registered before `seen_ms` and whose allocation is not among them (or is an older
  // incarnation) is fenced: it is assigned nothing more and its attempts are requeued at once,
  // not charged, with `why` as the reason. With `exact` (ssh pools, whose coordinator made every
  // start itself) a newer incarnation than the one running is fenced too. Returns the fenced
  // workers' ids.
  struct RunningAllocation {
    int restart_count = 0;
    int64_t ends_ms = 0;
  };
  std::vector<std::string> FenceAllocations(const std::string& pool,
                                            const std::map<int64_t, RunningAllocation>& running,
                                            int64_t seen_ms, const std::string& why,
                                            bool exact = false);
  // The pool's connected workers by Slurm job id: how many runs each job's workers hold now.
  std::map<int64_t, int> RunsByAllocation(const std::string& pool) const;
  // By worker id, for ListWorkers: each connected worker's Slurm allocation (pool, job, when it
  // ends as the last squeue or its Hello said) and whether it drains; others are left out.
  std::map<std::string, WorkerAllocation> WorkerAllocations() const;

  // One scheduling pass and one lease check (the loop calls these; tests may too).
  void ScheduleOnce();
  void ExpireLeases();

 private:
  // What a metric batch needs before the store is written: `done` with the final `replies`
  // (refused, or not node 0's), or the append to make (`append`), or neither (a stray whose
  // attempt could not be read: `status`).
  struct MetricsPlan {
    bool done = false;
    std::vector<v1::CoordinatorMessage> replies;
    bool append = false;
    absl::Status status;
    int64_t run_id = 0;
    std::vector<MetricPoint> points;
    std::optional<int64_t> resumed;
  };
  MetricsPlan PlanMetrics(const std::string& worker_id, const v1::MetricBatch& msg);
  // The reply once the store answered `s` for batch `seq` of the attempt.
  std::vector<v1::CoordinatorMessage> MetricsStored(int64_t attempt_id, int64_t seq,
                                                    const absl::Status& s);

  // One worker's share of a live attempt, in that worker's `attempts`. A gang attempt has one
  // share per node, each in its own worker's map under the same attempt id. A share (and its
  // GPUs) stays until its own node reports RunFinished or is lost, also after the attempt has
  // ended in the store, so that no new run lands on GPUs whose trainer is still stopping.
  // After a coordinator restart node 0's share comes from the store (`restored`), the other
  // nodes' from their Hellos (AcceptHeld).
  struct LiveAttempt {
    int64_t run_id = 0;
    int64_t fencing_token = 0;
    std::vector<int> gpus;  // empty: a CPU slot
    GangNode node{};  // node 0 of 1 unless the attempt is a gang
    // Loaded by Start() from the store: node 0, but the gang's size (node.num_nodes) is not known
    // until a node of it says so in its Hello.
    bool restored = false;
    // Set when a reconnecting worker no longer runs the attempt: its RunFinished may still be
    // in the worker's outbox, so the attempt is lost only if nothing arrives by then.
    int64_t orphan_deadline_ms = 0;
    // The run's configured steps, the bound on metric steps (dispatcher_input.cc); looked up
    // once per share. nullopt while unknown or when the config does not say.
    bool steps_known = false;
    std::optional<int64_t> configured_steps = std::nullopt;
    // The run's sweep and block (its seed), for keeping a block on one GPU model.
    int64_t sweep_id = 0;
    int block = 0;
  };
  struct WorkerState {
    std::shared_ptr<WorkerSession> session;  // null while disconnected
    int64_t last_heartbeat_ms = 0;
    std::vector<int> gpu_indices;
    std::string gpu_model;  // of its first GPU
    int cpu_slots = 0;
    std::vector<std::string> datasets;
    bool allow_scripts = false;  // Hello.allow_scripts
    std::map<int64_t, LiveAttempt> attempts;  // by attempt id
    bool marked_gone = false;  // the store says disconnected since the lease ran out
    int64_t persisted_heartbeat_ms = 0;  // last TouchWorker written to the store
    // Pools (issue 15): from Hello.slurm; a Slurm pilot's pool, allocation and when it ends.
    std::string pool;
    int64_t slurm_job_id = 0;
    int slurm_restart = 0;
    std::string allocation;  // "cluster/job.restart"; "" outside Slurm
    std::string slurm_step;  // the step the worker runs as (SLURM_STEP_ID); "" outside Slurm
    bool ssh = false;        // an ssh pool's (Hello.ssh): slurm_job_id stands for its host
    int64_t ends_ms = 0;
    int64_t registered_ms = 0;
    bool draining = false;
    bool fenced = false;  // its allocation is gone: nothing more for it
  };
  // Records what a Hello says about pools on the worker's state.
  static void NoteSlurm(const v1::Hello& hello, int64_t now, WorkerState* w);
  // Requeues these attempts without charge (lost), cancelling their other nodes; `why` names
  // the cause in the logs and the cancels.
  void ReleaseAttempts(const std::vector<std::pair<std::string, int64_t>>& worker_attempts,
                       const std::string& why);

  void Loop();
  int64_t Now() const { return options_.clock->WallMs(); }
  // The share a reconnecting worker keeps for a HeldAttempt of its Hello, or nullopt when the
  // claim is stale: not the run's current unfinished attempt with that fencing token in the
  // store, a node rank the store contradicts (node 0 is the attempt's worker there, no other node
  // is), or one that does not fit the gang known so far. `own` is the worker's share from before
  // the reconnect, if any.
  std::optional<LiveAttempt> AcceptHeld(const std::string& worker_id, const v1::HeldAttempt& h,
                                        const LiveAttempt* own) const;
  // Whether `node` of the attempt fits the shares other workers hold: the same gang size, a rank
  // none of them has. Restored shares (node 0, size unknown) fit any node other than 0.
  bool FitsGang(const std::string& worker_id, int64_t attempt_id, const GangNode& node) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A node of the attempt said how large its gang is: restored shares learn it.
  void LearnGangSize(int64_t attempt_id, int num_nodes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<NodeCapacity> Capacity() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The GPU model each (sweep, block) with live GPU attempts runs on.
  std::map<std::pair<int64_t, int>, std::string> BlockModels() const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The queued runs the scheduler may place now, with each sweep's active run count in `active`;
  // runs that sequential seeds hold back (seed_sequencer.h) are left out, with why, in `held`.
  absl::StatusOr<std::vector<QueuedRun>> QueuedRuns(std::map<int64_t, int>* active,
                                                    std::map<int64_t, std::string>* held);
  // How long the run should take: the mean duration of its variant's succeeded runs, for
  // sweeps on a pool (whose allocations end); 0 when unknown (dispatcher_pools.cc).
  // `by_variant` caches the answer within one scheduling pass.
  int64_t ExpectedMs(const Run& run, std::map<int64_t, int64_t>* by_variant);
  void Assign(const Placement& p);
  absl::StatusOr<std::string> RunConfig(const Run& run);
  // Removes one worker's share of an attempt (the other nodes' shares stay). With a fencing
  // token, only a share held with that token: a result under another token does not come from
  // the share's holder, and freeing its GPUs would let the scheduler place a second run on them.
  void RetireShare(const std::string& worker_id, int64_t attempt_id,
                   std::optional<int64_t> fencing_token = std::nullopt);
  std::optional<LiveAttempt> ShareOf(const std::string& worker_id, int64_t attempt_id) const;
  // The share's node, or for a result that outlived its share, node 0 when the store names this
  // worker as the attempt's (Assign records node 0's) and kUnknownRank otherwise.
  GangNode NodeOf(const std::string& worker_id, int64_t attempt_id) const;
  // Sends Cancel for the attempt to every worker but `except` that still holds a share of it.
  void CancelOtherNodes(int64_t attempt_id, const std::string& except, const std::string& why);
  // Workers whose lease ran out since the last call (each reported once per silence).
  std::vector<std::string> SilentWorkers(int64_t now);
  void SendTo(const std::string& worker_id, const v1::CoordinatorMessage& msg);

  // Trust (dispatcher_trust.cc). Whether `worker_id` holds the attempt with this fencing token:
  // a share of it, or, for an attempt no live share names (a coordinator restart, a result sent
  // again), the store's record naming this worker with this token. Node 0 of a gang is the one
  // the store names; other nodes hold shares (from their Assignment or their Hello).
  // `gang_result`: a RunFinished, which a gang's node whose share is gone (a coordinator restart
  // after its trainer ended) may still send with the gang's token.
  bool HoldsAttempt(const std::string& worker_id, int64_t attempt_id, int64_t fencing_token,
                    bool gang_result = false);
  // The reply to a message for an attempt the worker does not hold: `ack` and a Cancel saying
  // so; nothing is stored or changed.
  std::vector<v1::CoordinatorMessage> RefuseForeign(const std::string& worker_id,
                                                    int64_t attempt_id, const std::string& what,
                                                    v1::CoordinatorMessage ack);
  // The ack contract: the batch `seq` of the attempt is committed; returns the committed prefix.
  // The committed seqs of an attempt are loaded from the store when first needed (after a
  // coordinator restart the worker resends only what was not acknowledged). nullopt when the
  // store cannot say (nothing is acknowledged then).
  std::optional<int64_t> CommitBatch(int64_t attempt_id, int64_t seq);
  std::optional<int64_t> CommittedPrefix(int64_t attempt_id);
  void ForgetBatches(int64_t attempt_id);
  // Whether the attempt is still its run's current, unfinished attempt (in the store).
  bool StillOpen(int64_t attempt_id) const;

  // The run's target val loss: its config's (what its trainer compared against), else its
  // sweep's (dispatcher_input.cc).
  static constexpr double kDefaultTargetValLoss = 3.28;
  double TargetOf(int64_t run_id);

  // Worker input checked before it is stored (dispatcher_input.cc, server/core/worker_input.h).
  // The run's configured steps: from the worker's share when known, else from the store (and
  // then remembered in the share).
  std::optional<int64_t> ConfiguredSteps(const std::string& worker_id, int64_t attempt_id,
                                         int64_t run_id);
  // Refuses `what` ("metric batch 3", "result") that failed its check with `why`: a log line,
  // the attempt fails with the reason if the worker holds it (the fencing token decides), its
  // other nodes get Cancel, and the reply is `ack` plus a Cancel carrying the reason. Nothing
  // of the input is stored.
  std::vector<v1::CoordinatorMessage> RefuseInput(const std::string& worker_id,
                                                  int64_t attempt_id, int64_t fencing_token,
                                                  const std::string& what,
                                                  const absl::Status& why,
                                                  v1::CoordinatorMessage ack);

  Store* const store_;
  ChangeFeed* const feed_;
  const DispatcherOptions options_;
  SeedSequencer sequencer_{store_};  // used by the scheduling pass only

  mutable absl::Mutex mu_;
  std::map<std::string, WorkerState> workers_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::string> waiting_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // Scheduling wakes on kicks (submissions, capacity changes), not on every metric batch: the
  // loop waits on mu_ until kicked_ or stop_ (or a tick passes).
  bool kicked_ ABSL_GUARDED_BY(mu_) = false;
  bool KickedOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return kicked_ || stop_; }
  std::thread loop_;

  // Committed batches per attempt beyond the acknowledged prefix (the ack contract).
  struct Committed {
    int64_t prefix = 0;        // every seq in 1..prefix is committed
    std::set<int64_t> beyond;  // committed seqs > prefix + 1
  };
  absl::Mutex ack_mu_ ABSL_ACQUIRED_AFTER(mu_);
  std::map<int64_t, Committed> committed_ ABSL_GUARDED_BY(ack_mu_);
};

}  // namespace ablate

#endif  // ABLATE_SERVER_DISPATCH_DISPATCHER_H_
