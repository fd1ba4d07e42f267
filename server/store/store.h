// The coordinator's durable state in SQLite (DESIGN §5): sweeps, variants, runs, attempts,
// metrics, workers and events. The only code that knows SQL; everything above it speaks the
// domain types of server/core/model.h and absl::Status.
#ifndef ABLATE_SERVER_STORE_STORE_H_
#define ABLATE_SERVER_STORE_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/clock.h"
#include "common/code_snapshot.h"
#include "server/core/model.h"

namespace ablate {

class Checkpointer;
class Connection;
class ConnectionPool;
class FenceCache;
class Writer;

struct StoreOptions {
  // Its WallMs stamps every timestamp the store writes (ms since the epoch). Not owned; must
  // outlive the store.
  const Clock* clock = &SystemClock::Get();
  // 0 = apply all embedded migrations. N > 0 = know only the first N (tests of upgrades): the
  // store then behaves as a coordinator whose newest schema is migration N.
  int max_migrations = 0;
  int busy_timeout_ms = 5000;
  // Most writes committed in one transaction by the writer thread.
  int max_batch = 256;
  // Reader connections kept open between reads (more are opened under concurrent load).
  int max_idle_readers = 4;
};

// Filters of the list calls. limit 0 = no limit.
struct SweepFilter {
  std::optional<SweepState> state;
  std::optional<std::string> tag;
  int limit = 0;
  int offset = 0;
};

struct RunFilter {
  std::optional<int64_t> sweep_id;
  std::optional<RunState> state;
  int limit = 0;
  int offset = 0;
};

// What a worker reports when an attempt ends. `state` is kSucceeded, kFailed or kCancelled
// (a lost worker is LoseAttempt's business).
struct AttemptResult {
  AttemptState state = AttemptState::kSucceeded;
  int exit_code = 0;
  std::string error;
  std::string stderr_tail;
  std::optional<RunSummary> summary;  // stored on the run when given
};

// A run's curve as charts read it.
struct MetricCurve {
  int64_t run_id = 0;
  int64_t attempt_id = 0;  // its latest attempt (see GetMetrics); 0 when the run never had one
  int64_t total_points = 0;         // stored before downsampling
  std::vector<MetricPoint> points;  // step order; see DownsampleMinMax (downsample.h)
};

// One published speedrun record (migrations/0003_records.sql).
struct Record {
  std::string id;  // the record number, "21b" / "21c" for re-timings of #21
  int number = 0;
  std::string date;  // yyyy-mm-dd
  double record_time_ms = 0;
  std::optional<int64_t> steps;
  std::optional<double> ms_per_step;
  std::string description;
  std::string source;  // folder (commit) in modded-nanogpt; "" when none
  std::string preset;  // shipped preset reproducing it; "" when none
};

// A succeeded run with where it ran, for comparing runs across sweeps (records page).
struct PlacedRun {
  Run run;
  std::string config_hash;  // of its variant (seed excluded)
  int gpus_per_run = 0;     // of its sweep; 0 = one CPU slot
  std::string gpu_model;    // first GPU of the worker of its succeeded attempt; "" if unknown
  std::string dataset;      // of its sweep
};

// Thread-safe: every method may be called from any thread. Writes are queued to one writer
// thread that commits several of them per transaction; a write call returns once its own write
// is committed (or with its own error, leaving the store unchanged by it). Reads run on pooled
// reader connections and see every write that has returned.
//
// Status codes common to all methods: NOT_FOUND for an unknown id; FAILED_PRECONDITION for an
// operation the current state forbids (stale fencing token, cancelling a finished sweep);
// INVALID_ARGUMENT for malformed input; UNAVAILABLE / DATA_LOSS / RESOURCE_EXHAUSTED for
// database trouble (see SqliteError).
class Store {
 public:
  // Opens (creating if needed) the database at `path` and migrates it to the newest schema.
  // ":memory:" opens a private in-memory database shared by this store's connections only.
  // FAILED_PRECONDITION when the file's schema is newer than this build knows (the message says
  // which versions and what to do) or the file cannot be opened.
  static absl::StatusOr<std::unique_ptr<Store>> Open(std::string path, StoreOptions options = {});
  // Finishes queued writes, then closes every connection.
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // The schema version the database is at (the newest applied migration).
  int SchemaVersion() const { return schema_version_; }
  const std::string& path() const { return path_; }

  // --- Sweeps, variants, runs ---------------------------------------------------------------
  // Stores a sweep, its variants and runs in one transaction and writes a "submitted" event.
  // On input each Run::variant_id holds the Variant::index of its variant (INVALID_ARGUMENT when
  // no variant has it); ids, sweep_id, states and created_ms are assigned here (created_ms from
  // the sweep when set). Returns the new sweep id.
  absl::StatusOr<int64_t> CreateSweep(Sweep sweep, std::vector<Variant> variants,
                                      std::vector<Run> runs);
  absl::StatusOr<Sweep> GetSweep(int64_t sweep_id) const;
  // Newest first.
  absl::StatusOr<std::vector<Sweep>> ListSweeps(const SweepFilter& filter = {}) const;
  // In index order (baseline first). NOT_FOUND for an unknown sweep.
  absl::StatusOr<std::vector<Variant>> ListVariants(int64_t sweep_id) const;
  absl::StatusOr<Run> GetRun(int64_t run_id) const;
  // Oldest first (submission order, which is also the scheduler's FIFO order).
  absl::StatusOr<std::vector<Run>> ListRuns(const RunFilter& filter = {}) const;
  // Every RunState, with 0 for states no run is in. NOT_FOUND for an unknown sweep.
  absl::StatusOr<std::map<RunState, int>> CountRunsByState(int64_t sweep_id) const;
  // Cancels the sweep and each of its unfinished runs. Returns the runs that were assigned or
  // running, whose workers must be told to stop; their attempts stay open until the workers
  // report (FinishAttempt) or are lost (LoseAttempt). FAILED_PRECONDITION when the sweep has
  // already finished (succeeded, failed or cancelled).
  absl::StatusOr<std::vector<int64_t>> CancelSweep(int64_t sweep_id);
  // Sequential seeds: cancels those of `run_ids` that belong to the sweep and are still queued
  // (others are left as they are), with `reason` as their error, writes one event for the sweep
  // saying so, and moves the sweep to the state its runs imply. Returns how many it cancelled.
  // NOT_FOUND for an unknown sweep. (store_sequential.cc)
  absl::StatusOr<int> SkipQueuedRuns(int64_t sweep_id, const std::vector<int64_t>& run_ids,
                                     const std::string& reason);
  // Sets the summary columns of a run (the worker's running summary). NOT_FOUND if no such run.
  absl::Status UpdateRunSummary(int64_t run_id, const RunSummary& summary);

  // --- Attempts (fencing) --------------------------------------------------------------------
  // Assigns a queued run to a worker: a new attempt whose number and fencing token are one more
  // than the run's previous ones; the run becomes assigned with this as its current attempt.
  // FAILED_PRECONDITION when the run is not queued. A Slurm pilot's attempt records the job its
  // worker id names and `slurm_step_id`, the step the worker runs as ("" outside Slurm).
  absl::StatusOr<Attempt> CreateAttempt(int64_t run_id, const std::string& worker_id,
                                        const std::string& slurm_step_id = "");
  absl::StatusOr<Attempt> GetAttempt(int64_t attempt_id) const;
  // In attempt-number order.
  absl::StatusOr<std::vector<Attempt>> ListAttempts(int64_t run_id) const;
  // The trainer started: attempt and run become running (idempotent for a running attempt).
  // FAILED_PRECONDITION for a stale token / non-current or finished attempt.
  absl::Status MarkAttemptRunning(int64_t attempt_id, int64_t fencing_token);
  // Ends the current attempt and moves its run on: kSucceeded -> run succeeded; kFailed ->
  // attempts_used + 1 and the run is requeued, or failed once attempts_used reaches the sweep's
  // max_attempts; kCancelled -> a cancelled run stays cancelled, any other is requeued without
  // counting. A cancelled run stays cancelled whatever the result. Returns the updated run.
  // FAILED_PRECONDITION, changing nothing, for a stale token, a non-current attempt or one
  // already finished; INVALID_ARGUMENT for a result state other than the three above.
  absl::StatusOr<Run> FinishAttempt(int64_t attempt_id, int64_t fencing_token,
                                    const AttemptResult& result);
  // The attempt's worker was lost, or gave it back (an infrastructure failure): the attempt
  // becomes lost, with `why` as its error when given, and, if it is its run's current attempt and
  // the run is unfinished, the run is requeued without counting against attempts_used.
  // FAILED_PRECONDITION for a finished attempt. Returns the updated run.
  absl::StatusOr<Run> LoseAttempt(int64_t attempt_id, const std::string& why = "");

  // --- Metrics -------------------------------------------------------------------------------
  // Stores one batch of points of the run's current attempt. Idempotent per (attempt_id, seq):
  // a batch already committed returns true (duplicate) and changes nothing; a new one returns
  // false. A point for a step already stored merges into it (the fields it sets replace the
  // stored ones). `resumed_from_step` (MetricBatch.resumed_from_step): the attempt resumed from
  // a checkpoint with that many steps done; recorded on the attempt with its first batch, in the
  // same transaction. FAILED_PRECONDITION for a stale token or non-current attempt;
  // INVALID_ARGUMENT when the attempt is not the run's.
  absl::StatusOr<bool> AppendMetrics(int64_t run_id, int64_t attempt_id, int64_t fencing_token,
                                     int64_t seq, const std::vector<MetricPoint>& points,
                                     std::optional<int64_t> resumed_from_step = std::nullopt);
  // AppendMetrics without waiting (issue 28): queued into the writer's next group commit; `done`
  // gets what AppendMetrics would have returned, on the writer thread once that transaction
  // ended (keep it short: queue the reply, do not call the store). `done` is not called, and
  // false is returned, when the store is closing.
  using AppendDone = std::function<void(absl::StatusOr<bool>)>;
  bool AppendMetricsLater(int64_t run_id, int64_t attempt_id, int64_t fencing_token, int64_t seq,
                          std::vector<MetricPoint> points, std::optional<int64_t> resumed_from_step,
                          AppendDone done);
  // The seqs of the attempt's committed batches, ascending (the coordinator's ack contract:
  // Ack(seq) only for a committed prefix, DESIGN §4).
  absl::StatusOr<std::vector<int64_t>> CommittedBatchSeqs(int64_t attempt_id) const;
  // `claimed` (a worker's summary of the run) as far as the run's stored curve supports it, each
  // claim it does not support replaced by what the points say: steps at most the last stored
  // step; final_val_loss one of the stored val losses (else the last); reached_target only when a
  // stored val point reached `target_val_loss` (the run's), with its step as target_step and a
  // time_to_target_ms between the training times around it; train_time_ms at most the stored
  // one, mean_step_ms within the stored step times. No stored point: an empty summary.
  absl::StatusOr<RunSummary> SupportedSummary(int64_t run_id, double target_val_loss,
                                              const RunSummary& claimed) const;
  // The run's curve: the points of its current attempt (or its latest one, while the run is
  // requeued); when that attempt resumed from a checkpoint with s steps done, preceded by the
  // curve of the attempts before it up to step s (recursively; attempts that never reported a
  // point are passed over), so that each step appears once. Downsampled to at most `max_points`
  // per series with the min and max of each bucket (0 = kDefaultMaxPoints). While an attempt is
  // current its curve only grows at the end. INVALID_ARGUMENT for max_points < 0 or == 1.
  absl::StatusOr<MetricCurve> GetMetrics(int64_t run_id, int max_points) const;
  // Raw points of the same curve with step > after_step, in step order (live streaming, export,
  // compare); limit 0 = all.
  absl::StatusOr<std::vector<MetricPoint>> ListMetricPoints(int64_t run_id, int64_t after_step,
                                                            int limit) const;
  // ListMetricPoints of several runs in one read transaction (the dashboard's shared live poll
  // of a sweep): one answer per entry, in order; `limit` applies to each run.
  struct PointsAfter {
    int64_t run_id = 0;
    int64_t after_step = INT64_MIN;
  };
  absl::StatusOr<std::vector<std::vector<MetricPoint>>> ListMetricPointsOfRuns(
      std::span<const PointsAfter> runs, int limit) const;
  // For a new attempt of the run (Assignment.resume_max_step): the most steps done a checkpoint
  // may have for the attempt to resume from it without a gap in the curve. The last step of the
  // curve its latest attempt with points left, less one when that step has no val point (its
  // validation may be lost, and a checkpoint there would not run it again); 0 when there is none.
  absl::StatusOr<int64_t> ResumeLimit(int64_t run_id) const;

  // --- Workers -------------------------------------------------------------------------------
  // Inserts or replaces a worker's description; registered_ms is kept from the first
  // registration (now when 0 on insert). INVALID_ARGUMENT for an empty id.
  absl::Status UpsertWorker(const Worker& worker);
  absl::Status SetWorkerConnected(const std::string& worker_id, bool connected);
  // Records a heartbeat at `now_ms`.
  absl::Status TouchWorker(const std::string& worker_id, TimestampMs now_ms);
  // The same without waiting: queued into the writer's next group commit (with the metric
  // batches waiting then), its outcome not reported. A later write from the same thread commits
  // with it or after it; a read right after it may not see it yet.
  void TouchWorkerLater(const std::string& worker_id, TimestampMs now_ms);
  absl::StatusOr<Worker> GetWorker(const std::string& worker_id) const;
  // By id.
  absl::StatusOr<std::vector<Worker>> ListWorkers() const;

  // --- Events --------------------------------------------------------------------------------
  // Appends an event (time_ms 0 = now; sweep_id / run_id 0 = none) and returns its id. Ids only
  // grow, so ListEvents' after_id is a safe cursor.
  absl::StatusOr<int64_t> AppendEvent(const Event& event);
  // Events with id > after_id, oldest first. sweep_id 0 = every sweep; run_id 0 = every run of
  // the sweep and its sweep-level events. limit 0 = no limit.
  absl::StatusOr<std::vector<Event>> ListEvents(int64_t sweep_id, int64_t run_id, int64_t after_id,
                                                int limit) const;

  // --- Records and cross-sweep queries (store_records.cc) ------------------------------------
  // The published records, oldest first (by date, then number, then id).
  absl::StatusOr<std::vector<Record>> ListRecords() const;
  // Succeeded runs of every variant whose config hash is in `config_hashes`, in run id order.
  absl::StatusOr<std::vector<PlacedRun>> ListSucceededRunsByConfigHash(
      const std::vector<std::string>& config_hashes) const;
  // Succeeded runs of script baselines that name a row of the records table (spec key
  // `record:`), by record id, each list in run id order (issue 14).
  absl::StatusOr<std::map<std::string, std::vector<PlacedRun>>> ListSucceededRunsByScriptRecord()
      const;

  // --- Code snapshots of script runs (store_snapshots.cc) ------------------------------------
  // Stores `files` under `hash` unless a snapshot with that hash is stored already (content
  // addressing: the same bytes are stored once). The caller computed the hash (SnapshotHash).
  absl::Status PutSnapshot(const std::string& hash, const Snapshot& files);
  // NOT_FOUND for an unknown hash.
  absl::StatusOr<Snapshot> GetSnapshot(const std::string& hash) const;
  // How many snapshots are stored (tests check that a re-submitted script is stored once).
  absl::StatusOr<int64_t> CountSnapshots() const;

  // Records as data (issue 39; store_imports.cc). Stores an imported sweep in one transaction:
  // the sweep (succeeded, imported), its variants, one succeeded run per log with one attempt of
  // worker "imported" whose points are the log's curve, each log's facts, and the snapshots.
  // Nothing is stored when any part fails.
  struct ImportedRun {
    int variant_index = 0;  // into `variants`
    RunSummary summary;
    std::vector<MetricPoint> points;  // step order, steps unique
    ImportedLogInfo log;
  };
  absl::StatusOr<int64_t> ImportSweep(Sweep sweep, const std::vector<Variant>& variants,
                                      const std::vector<ImportedRun>& runs,
                                      const std::map<std::string, Snapshot>& snapshots);
  // Run id -> its log, for the runs of an imported sweep (empty for any other sweep).
  absl::StatusOr<std::map<int64_t, ImportedLogInfo>> ListImportedLogs(int64_t sweep_id) const;

 private:
  Store(std::string path, StoreOptions options, int schema_version,
        std::unique_ptr<ConnectionPool> readers, std::shared_ptr<FenceCache> fences,
        std::unique_ptr<Checkpointer> checkpointer, std::unique_ptr<Writer> writer);

  TimestampMs Now() const;
  // Runs `fn` in a read transaction on a pooled reader connection.
  absl::Status ReadTx(absl::FunctionRef<absl::Status(Connection&)> fn) const;
  // Runs `fn` on the writer thread inside a transaction; returns once it is committed. A full
  // disk comes back as DiskFull's error. `fences`: kForget for any write that may change which
  // attempt is current or its token (the default: the fence cache is cleared before `fn`
  // runs); kKeep only for writes that change neither (metric appends, worker heartbeats).
  enum class Fences { kForget, kKeep };
  absl::Status WriteTx(absl::FunctionRef<absl::Status(Connection&)> fn,
                       Fences fences = Fences::kForget);
  // RESOURCE_EXHAUSTED naming the data dir for SQLite's "database or disk is full", and a line on
  // stderr at most once a minute.
  absl::Status DiskFull(const absl::Status& sqlite_full);

  template <class T>
  absl::StatusOr<T> Read(absl::FunctionRef<absl::StatusOr<T>(Connection&)> fn) const {
    std::optional<absl::StatusOr<T>> result;
    absl::Status status = ReadTx([&](Connection& c) {
      result.emplace(fn(c));
      return result->status();
    });
    if (!status.ok()) return status;
    return *std::move(result);
  }
  template <class T>
  absl::StatusOr<T> Write(absl::FunctionRef<absl::StatusOr<T>(Connection&)> fn,
                          Fences fences = Fences::kForget) {
    std::optional<absl::StatusOr<T>> result;
    absl::Status status = WriteTx(
        [&](Connection& c) {
          result.emplace(fn(c));
          return result->status();
        },
        fences);
    if (!status.ok()) return status;
    return *std::move(result);
  }

  const std::string path_;
  const StoreOptions options_;
  const int schema_version_;
  std::unique_ptr<ConnectionPool> readers_;
  // The metric appends' fencing checks from memory (fence_cache.h); shared with the writer's
  // lost-transaction hook, used on the writer thread only.
  const std::shared_ptr<FenceCache> fences_;
  // Checkpoints the WAL off the writer's thread (none for in-memory databases); destroyed after
  // the writer, whose connection calls into it on each commit.
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<Writer> writer_;  // destroyed first: drains writes before readers go
  std::atomic<TimestampMs> last_disk_full_log_ms_{-60000};
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_STORE_H_
