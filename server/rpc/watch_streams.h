// WatchSweep and WatchRun on gRPC's callback API (issue 28): a watch stream holds no thread.
//
// What each stream sends, and when, is what the synchronous handlers sent: the client token is
// checked first; a poll at once, then one each time the change feed moved (at most every
// `min_interval`, and at least every `tick`), each sending an update when something the client
// was not told yet changed (the first poll always sends); WatchSweep's streams on one sweep share
// its polls (SweepWatchCache). A stream ends OK once its sweep or run finished (after sending
// that), OK when the client cancels or its deadline passes, with a read's error status when a
// poll fails, and UNAVAILABLE "shutting down" after the poll that follows the feed's Close().
// Between polls a stream is parked in the WatchScheduler; its polls run on the scheduler's pool.
#ifndef ABLATE_SERVER_RPC_WATCH_STREAMS_H_
#define ABLATE_SERVER_RPC_WATCH_STREAMS_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>

#include "ablate/v1/client.pb.h"
#include "server/core/change_feed.h"
#include "server/rpc/sweep_watch_cache.h"
#include "server/rpc/token_auth.h"
#include "server/rpc/watch_scheduler.h"
#include "server/store/store.h"

namespace ablate {

// What the streams use; everything must outlive every stream (the service and its server).
struct WatchDeps {
  Store* store = nullptr;
  ChangeFeed* feed = nullptr;
  const TokenAuth* auth = nullptr;
  SweepWatchCache* sweeps = nullptr;
  WatchScheduler* scheduler = nullptr;
  std::chrono::milliseconds min_interval{250};
};

// What a WatchSweep stream has told its client of the sweep itself, and whether a poll's update
// is news: the first always is, then any move of the counts or of the sweep's state, or any run
// or event in it. The state alone is news because a poll can read the last run's count before
// the finished state it implies; without it the stream would end unheard (`ablate watch` exit 1).
class SweepNews {
 public:
  // True when `update` is to be sent; then it is what the client was told.
  bool Take(const v1::SweepUpdate& update);

 private:
  bool first_ = true;
  v1::RunCounts counts_;
  v1::SweepState state_ = v1::SWEEP_STATE_UNSPECIFIED;
};

// The reactors for one call each; they delete themselves when gRPC is done with the call.
grpc::ServerWriteReactor<v1::SweepUpdate>* NewSweepWatch(const WatchDeps& deps,
                                                         grpc::CallbackServerContext* ctx,
                                                         int64_t sweep_id);
grpc::ServerWriteReactor<v1::RunUpdate>* NewRunWatch(const WatchDeps& deps,
                                                     grpc::CallbackServerContext* ctx,
                                                     int64_t run_id);

}  // namespace ablate

#endif  // ABLATE_SERVER_RPC_WATCH_STREAMS_H_
