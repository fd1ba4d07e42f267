// The dashboard's front door (issue 24): accepts connections itself and hands a connection to the
// HTTP server's thread pool only once its whole request (head, and a body announced by
// Content-Length) has arrived. A client that sends a byte a second waits here, in one epoll
// thread, and never holds a pool thread; one that has not sent its request within the header
// deadline is closed. Each client address may hold at most a set number of connections (waiting
// and being served together); more are answered 503 and closed.
//
// Under TLS the bytes cannot be read before the handshake: there the gate waits only for the
// first bytes (the deadline and the per-address cap still apply). Over plain HTTP a `divert` hook
// may take a whole request's connection instead of the pool (the dashboard's live pages,
// live_server.h); such a connection keeps its address's slot until the hook releases it.
#ifndef ABLATE_SERVER_HTTP_CONNECTION_GATE_H_
#define ABLATE_SERVER_HTTP_CONNECTION_GATE_H_

#include <chrono>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace ablate {

struct ConnectionGateOptions {
  // Connections one client address may hold at once; more are refused with 503.
  int max_per_address = 64;
  // From accept to the last byte of the request; then the connection is closed unanswered.
  std::chrono::milliseconds request_deadline{10000};
  // Connections waiting for their request at once, all addresses together.
  size_t max_waiting = 10000;
  // The gate waits for a body announced by Content-Length up to this size; larger ones are
  // handed over with the head (the server refuses them by its own payload limit).
  size_t max_body_wait = 64 * 1024;
  // Only wait for the first bytes (TLS: the request is encrypted).
  bool opaque = false;
};

// Thread-safe. Owns the listening socket from Start on.
class ConnectionGate {
 public:
  // `serve(fd)` serves one connection on a pool thread and closes it; `enqueue` puts work on
  // that pool.
  using Serve = std::function<void(int fd)>;
  using Enqueue = std::function<void(std::function<void()>)>;
  // Given a whole plain-HTTP request (`request` is what was peeked: it is still in the socket),
  // either returns false (the pool serves it) or takes `fd` and calls `release` once it closed
  // it. Runs on the gate's thread: it must not block.
  using Divert = std::function<bool(int fd, std::string_view request, const std::string& address,
                                    std::function<void()> release)>;
  ConnectionGate(ConnectionGateOptions options, Serve serve, Enqueue enqueue,
                 Divert divert = nullptr);
  ~ConnectionGate();  // Stop()
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // Starts accepting on `listen_fd` (bound and listening) in a thread of its own.
  void Start(int listen_fd);
  // Stops accepting, closes waiting connections and the listening socket, and shuts down
  // (without closing) the connections being served so that their handlers end. Idempotent.
  void Stop();

 private:
  struct Waiting {
    std::string address;
    std::chrono::steady_clock::time_point deadline;
  };
  void Loop();
  void AcceptAll();
  void Poke(int fd);
  void ExpireWaiting();
  void Drop(int fd);
  std::string Unwait(int fd);  // out of waiting_ and the epoll set; returns its address
  void HandOver(int fd, std::string address);
  void Finished(int dup_fd);
  bool TakeSlot(const std::string& address);
  void FreeSlot(const std::string& address);

  const ConnectionGateOptions options_;
  const Serve serve_;
  const Enqueue enqueue_;
  const Divert divert_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::map<int, Waiting> waiting_;  // gate thread only

  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, int> per_address_ ABSL_GUARDED_BY(mu_);
  // dup()s of the connections being served, with their address: shutdown() on Stop without a
  // race against the server closing (and the kernel reusing) the original descriptor.
  std::map<int, std::string> serving_ ABSL_GUARDED_BY(mu_);
};

// Whether `bytes` (the start of what a client sent) holds a whole HTTP request: the head up to
// its blank line and, when the head announces Content-Length up to `max_body_wait`, that many
// body bytes. Over-long heads (more than 8 KiB without a blank line) count as whole: the server
// answers them itself.
bool RequestComplete(std::string_view bytes, size_t max_body_wait);

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_CONNECTION_GATE_H_
