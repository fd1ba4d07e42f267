// The worker's on-disk outbox (DESIGN §4): every metric batch and every RunFinished is written
// durably before it is sent, and kept until the coordinator acknowledges it, so that nothing is
// lost across worker crashes, coordinator restarts or reconnects.
//
// Layout: one append-only file per attempt, DIR/<attempt_id>.outbox, of records
//   [u32 body length][u32 CRC-32 of body][body], body = 'M' + serialized WorkerMessage
//                                                     | 'A' + little-endian int64 acked seq.
// A torn or corrupt record ends the file: it and anything after it are ignored and truncated
// away on Open (a crash mid-append loses only the record that was not yet acknowledged as written).
// The file is deleted once its RunFinished is acknowledged, or on Drop.
#ifndef ABLATE_WORKER_OUTBOX_H_
#define ABLATE_WORKER_OUTBOX_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ablate/v1/worker.pb.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace ablate::worker {

// One unacknowledged message; seq is the batch's seq, or the RunFinished's implicit seq.
struct OutboxEntry {
  int64_t seq = 0;
  v1::WorkerMessage message;
};

// Sequence numbers: metric batches of an attempt get 1, 2, ...; its RunFinished takes the seq
// after the last batch. An Ack(attempt, s) drops every entry with seq <= s, so the coordinator
// acknowledges a RunFinished with seq >= (last batch seq + 1), e.g. INT64_MAX.
//
// Thread-safe. Errors: INTERNAL/… from the file system (errno translated once, in outbox.cc),
// RESOURCE_EXHAUSTED marked as disk_space.h's NoSpaceError when the disk is full (the record
// that did not fit is cut off again, so the file stays whole and later appends are kept),
// FAILED_PRECONDITION when appending to an attempt whose RunFinished is already in.
class Outbox {
 public:
  // Creates DIR (and its parents) if needed and loads every attempt file in it.
  static absl::StatusOr<std::unique_ptr<Outbox>> Open(const std::string& dir);
  ~Outbox();

  // Sets batch.seq to the attempt's next seq, appends it durably (write + fdatasync) and returns
  // the message to send.
  absl::StatusOr<v1::WorkerMessage> AppendBatch(v1::MetricBatch batch);
  // Appends the attempt's RunFinished durably, with last_batch_seq set to the seq of the
  // attempt's last batch; returns the message to send.
  absl::StatusOr<v1::WorkerMessage> AppendFinished(const v1::RunFinished& finished);
  // Drops entries with seq <= `seq`. Unknown attempts are ignored.
  absl::Status Ack(int64_t attempt_id, int64_t seq);
  // Forgets an attempt entirely (its writes are refused by the coordinator).
  absl::Status Drop(int64_t attempt_id);

  // Unacknowledged entries of the attempt with seq > after_seq, in seq order.
  std::vector<OutboxEntry> PendingAfter(int64_t attempt_id, int64_t after_seq) const;
  // Attempts that still have a file (not every entry acknowledged yet), ascending.
  std::vector<int64_t> Attempts() const;

 private:
  struct AttemptLog {
    int fd = -1;
    int64_t last_batch_seq = 0;
    bool finished = false;
    std::map<int64_t, v1::WorkerMessage> pending;  // seq -> message
  };

  explicit Outbox(std::string dir) : dir_(std::move(dir)) {}
  absl::Status Load(int64_t attempt_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<AttemptLog*> LogFor(int64_t attempt_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status AppendRecord(AttemptLog& log, const std::string& body, bool sync);
  absl::Status Remove(int64_t attempt_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string PathOf(int64_t attempt_id) const;

  const std::string dir_;
  mutable absl::Mutex mu_;
  std::map<int64_t, AttemptLog> logs_ ABSL_GUARDED_BY(mu_);
};

// CRC-32 (IEEE, reflected), exposed for tests.
uint32_t Crc32(const std::string& bytes);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_OUTBOX_H_
