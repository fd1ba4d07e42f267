// Many dashboard pages on the coordinator's live-update streams (server-sent events, HTTP/1.1
// chunked), as the load benchmark opens them: one TCP connection per page, all served by one
// epoll thread so that 500 pages cost the benchmark little CPU. Each client records when the
// stream answered, its `ready` message, and for every `points` message how long after the batch
// of its newest step was sent it arrived (SendTimes), i.e. how far the page lags the runs.
#ifndef ABLATE_BENCH_COORDINATOR_SSE_CLIENTS_H_
#define ABLATE_BENCH_COORDINATOR_SSE_CLIENTS_H_

#include <atomic>
#include <chrono>
#include <map>
#include <string_view>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "bench/coordinator/paced_runs.h"

namespace ablate::bench {

struct SseClientStats {
  std::string path;
  int status = 0;       // HTTP status; 0 = no response
  bool ready = false;   // got the `ready` message
  bool ended = false;   // the server closed the stream
  int64_t bytes = 0;
  int64_t messages = 0;
  std::vector<float> lag_ms;           // per points message: arrival - send of its newest step
  std::map<int64_t, int64_t> last_step;  // run id -> newest step received
};

class SseClients {
 public:
  // `times` must outlive this; lags are computed against it.
  SseClients(int port, const SendTimes* times);
  ~SseClients();  // Stop()
  SseClients(const SseClients&) = delete;
  SseClients& operator=(const SseClients&) = delete;

  // Opens one stream per path (connect + GET) and starts the reading thread. False (printed)
  // when a connection cannot be made.
  bool Open(const std::vector<std::string>& paths);
  // Until every stream got `ready` or ended; false after `timeout`.
  bool WaitReady(std::chrono::milliseconds timeout);
  // Closes every connection and joins the thread. Idempotent.
  void Stop();
  // The clients' records (a copy; complete after Stop).
  std::vector<SseClientStats> stats() const {
    absl::MutexLock lock(&mu_);
    return stats_;
  }

 private:
  struct Conn;
  void Loop();
  void OnBytes(size_t i, const char* data, size_t n, int64_t now_ns);
  void OnMessage(size_t i, const std::string& event, const std::string& data, int64_t now_ns);

  const int port_;
  const SendTimes* const times_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
  mutable absl::Mutex mu_;
  std::vector<SseClientStats> stats_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ablate::bench

#endif  // ABLATE_BENCH_COORDINATOR_SSE_CLIENTS_H_
