// What the store's writer knows from memory about attempts allowed to write metrics: the fencing
// check of a metric batch (the attempt is its run's current one, with this token) is read from
// SQLite once per attempt, not once per batch, for as long as nothing else is written.
#ifndef ABLATE_SERVER_STORE_FENCE_CACHE_H_
#define ABLATE_SERVER_STORE_FENCE_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ablate {

// Thread-safe (the store uses it from its writer thread only). Holds (attempt -> run, fencing
// token) pairs that passed the fencing check against the state the writer's connection sees.
// The contract that keeps it exact: only metric appends may run between Remember() and a Knows()
// that trusts it. Every other write (which may change a run's current attempt or an attempt's
// token) calls Clear() before it touches the database, and so does a transaction that does not
// commit (its reads may have seen writes that are now gone). At most `capacity` entries; past
// that the cache starts over (the next batches read their check again).
class FenceCache {
 public:
  explicit FenceCache(size_t capacity = 1 << 16) : capacity_(capacity) {}

  // Whether `attempt_id` of `run_id` with `fencing_token` passed the check since the last Clear.
  bool Knows(int64_t run_id, int64_t attempt_id, int64_t fencing_token) const;
  // `attempt_id` of `run_id` with `fencing_token` passed the check just now.
  void Remember(int64_t run_id, int64_t attempt_id, int64_t fencing_token);
  void Clear();
  size_t size() const;

 private:
  struct Entry {
    int64_t run_id = 0;
    int64_t fencing_token = 0;
  };
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::map<int64_t, Entry> entries_ ABSL_GUARDED_BY(mu_);  // by attempt id
};

}  // namespace ablate

#endif  // ABLATE_SERVER_STORE_FENCE_CACHE_H_
