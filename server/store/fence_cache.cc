// FenceCache: the writer's memory of attempts that passed the fencing check.
#include "server/store/fence_cache.h"

namespace ablate {

bool FenceCache::Knows(int64_t run_id, int64_t attempt_id, int64_t fencing_token) const {
  absl::MutexLock lock(&mu_);
  auto it = entries_.find(attempt_id);
  return it != entries_.end() && it->second.run_id == run_id &&
         it->second.fencing_token == fencing_token;
}

void FenceCache::Remember(int64_t run_id, int64_t attempt_id, int64_t fencing_token) {
  absl::MutexLock lock(&mu_);
  if (entries_.size() >= capacity_) entries_.clear();
  entries_[attempt_id] = Entry{run_id, fencing_token};
}

void FenceCache::Clear() {
  absl::MutexLock lock(&mu_);
  entries_.clear();
}

size_t FenceCache::size() const {
  absl::MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace ablate
