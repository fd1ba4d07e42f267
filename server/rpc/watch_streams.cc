// The watch streams' reactors: a poll on the scheduler's pool, a write, a park; see
// watch_streams.h.
#include "server/rpc/watch_streams.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "server/convert/convert.h"
#include "server/rpc/grpc_status.h"

namespace ablate {
namespace {

bool SweepFinished(SweepState s) {
  return s == SweepState::kSucceeded || s == SweepState::kFailed || s == SweepState::kCancelled;
}

// What a watcher has already been told about a run; a change in any of it is news.
struct RunFingerprint {
  RunState state;
  int64_t steps;
  int attempts_used;
  bool operator==(const RunFingerprint&) const = default;
};

RunFingerprint Fingerprint(const Run& r) { return {r.state, r.summary.steps, r.attempts_used}; }

// One watch call. Its steps never overlap: Wake (on the pool) polls and either starts a write,
// finishes, or parks; OnWriteDone (on a gRPC thread) finishes or parks. Each step's last act
// hands the stream on (StartWrite, Finish, Park), after which the step touches nothing of it:
// the next step may already run, and after Finish gRPC deletes the reactor (OnDone).
template <class Update>
class WatchStream : public grpc::ServerWriteReactor<Update>, public WatchScheduler::Stream {
 public:
  WatchStream(const WatchDeps& deps, grpc::CallbackServerContext* ctx) : deps_(deps), ctx_(ctx) {}

  bool Cancelled() const override { return cancelled_.load(); }
  void OnCancel() override {
    cancelled_ = true;
    deps_.scheduler->Poke();  // gRPC calls OnDone only after this returns
  }
  void OnDone() override { delete this; }

  void OnWriteDone(bool ok) override {
    update_.reset();  // not kept between polls: 200 watchers of a 500-run sweep held ~85 MB
    if (!ok) return this->Finish(grpc::Status::OK);  // the client went away
    AfterPoll();
  }

  void Wake(uint64_t version) override {
    version_ = version;
    if (cancelled_ || ctx_->IsCancelled()) return this->Finish(grpc::Status::OK);
    polled_ = WatchScheduler::Clock::now();
    update_ = std::make_unique<Update>();
    absl::StatusOr<bool> send = Poll(update_.get());
    if (!send.ok()) return this->Finish(ToGrpc(send.status()));
    if (*send) return this->StartWrite(update_.get());
    update_.reset();
    AfterPoll();
  }

 protected:
  // The derived constructor's last act: checks the token, then polls at once.
  void Start() {
    if (grpc::Status s = deps_.auth->CheckClient(*ctx_); !s.ok()) return this->Finish(s);
    deps_.scheduler->RunNow(this);
  }

  // Reads what changed into `update` (empty); true when it is to be sent. Sets `done_` when this was
  // the last poll (the sweep or run finished).
  virtual absl::StatusOr<bool> Poll(Update* update) = 0;

  const WatchDeps deps_;
  bool done_ = false;

 private:
  void AfterPoll() {
    if (done_) return this->Finish(grpc::Status::OK);
    if (deps_.feed->closed()) {
      return this->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "shutting down"));
    }
    deps_.scheduler->Park(this, version_, polled_ + deps_.min_interval);
  }

  grpc::CallbackServerContext* const ctx_;
  std::atomic<bool> cancelled_{false};
  uint64_t version_ = 0;  // the feed's version when the stream last woke
  WatchScheduler::Clock::time_point polled_;
  std::unique_ptr<Update> update_;  // being written until OnWriteDone
};

class SweepWatch final : public WatchStream<v1::SweepUpdate> {
 public:
  SweepWatch(const WatchDeps& deps, grpc::CallbackServerContext* ctx, int64_t sweep_id)
      : WatchStream(deps, ctx), sweep_id_(sweep_id), shared_(deps.sweeps->Acquire(sweep_id)) {
    Start();
  }

 private:
  absl::StatusOr<bool> Poll(v1::SweepUpdate* update) override {
    // The store is read by the sweep's poll that every stream on it shares.
    absl::StatusOr<std::shared_ptr<const SweepWatchCache::Snapshot>> snapshot = shared_->Get();
    if (!snapshot.ok()) return snapshot.status();
    const SweepWatchCache::Snapshot& now = **snapshot;
    *update->mutable_sweep() = now.sweep;
    for (const Run& r : now.runs) {
      auto [it, fresh] = told_.try_emplace(r.id, Fingerprint(r));
      if (fresh || !(it->second == Fingerprint(r))) {
        it->second = Fingerprint(r);
        ToProto(r, update->add_runs());
      }
    }
    if (absl::Status s = AddEvents(now, update); !s.ok()) return s;
    const bool send = news_.Take(*update);
    done_ = SweepFinished(FromProto(update->sweep().state()).value_or(SweepState::kQueued));
    return send;
  }

  // The sweep's events after the last one sent, from the shared poll when it still keeps them.
  absl::Status AddEvents(const SweepWatchCache::Snapshot& now, v1::SweepUpdate* update) {
    if (last_event_ >= now.events_floor) {
      auto e = std::upper_bound(now.events.begin(), now.events.end(), last_event_,
                                [](int64_t id, const Event& ev) { return id < ev.id; });
      for (int n = 0; e != now.events.end() && n < SweepWatchCache::kEventsPerPoll; ++e, ++n) {
        ToProto(*e, update->add_events());
        last_event_ = e->id;
      }
      return absl::OkStatus();
    }
    // Further behind than the shared poll keeps.
    absl::StatusOr<std::vector<Event>> events =
        deps_.store->ListEvents(sweep_id_, 0, last_event_, SweepWatchCache::kEventsPerPoll);
    if (!events.ok()) return events.status();
    for (const Event& e : *events) {
      ToProto(e, update->add_events());
      last_event_ = e.id;
    }
    return absl::OkStatus();
  }

  const int64_t sweep_id_;
  const std::shared_ptr<SweepWatchCache::Entry> shared_;
  std::map<int64_t, RunFingerprint> told_;
  int64_t last_event_ = 0;
  SweepNews news_;
};

class RunWatch final : public WatchStream<v1::RunUpdate> {
 public:
  RunWatch(const WatchDeps& deps, grpc::CallbackServerContext* ctx, int64_t run_id)
      : WatchStream(deps, ctx), run_id_(run_id) {
    Start();
  }

 private:
  absl::StatusOr<bool> Poll(v1::RunUpdate* update) override {
    absl::StatusOr<Run> run = deps_.store->GetRun(run_id_);
    if (!run.ok()) return run.status();
    absl::StatusOr<std::vector<MetricPoint>> points =
        deps_.store->ListMetricPoints(run->id, last_step_, 100000);
    if (!points.ok()) return points.status();
    done_ = IsTerminal(run->state);
    if (told_ && *told_ == Fingerprint(*run) && points->empty()) return false;
    ToProto(*run, update->mutable_run());
    for (const MetricPoint& p : *points) {
      ToProto(p, update->add_points());
      last_step_ = p.step;
    }
    told_ = Fingerprint(*run);
    return true;
  }

  const int64_t run_id_;
  int64_t last_step_ = -1;
  std::optional<RunFingerprint> told_;
};

}  // namespace

bool SweepNews::Take(const v1::SweepUpdate& update) {
  const bool news = first_ ||
                    update.sweep().counts().SerializeAsString() != counts_.SerializeAsString() ||
                    update.sweep().state() != state_ || update.runs_size() > 0 ||
                    update.events_size() > 0;
  if (news) {
    first_ = false;
    counts_ = update.sweep().counts();
    state_ = update.sweep().state();
  }
  return news;
}

grpc::ServerWriteReactor<v1::SweepUpdate>* NewSweepWatch(const WatchDeps& deps,
                                                         grpc::CallbackServerContext* ctx,
                                                         int64_t sweep_id) {
  return new SweepWatch(deps, ctx, sweep_id);
}

grpc::ServerWriteReactor<v1::RunUpdate>* NewRunWatch(const WatchDeps& deps,
                                                     grpc::CallbackServerContext* ctx,
                                                     int64_t run_id) {
  return new RunWatch(deps, ctx, run_id);
}

}  // namespace ablate
