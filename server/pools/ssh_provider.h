// An ssh pool's provider (issue 38): the rented nodes of one pool, reached with OpenSSH
// (ssh_transport.h), each running at most one ablate-worker that this coordinator started.
//
// Per host, on the provider's loop: one ssh call (on the host's master connection) says what
// the node's worker is doing (running, exited with a status, or never started); workers that
// are no longer the one started last are fenced in the dispatcher (their attempts requeued, not
// charged), and so are those of a host that does not answer. Then, for the runs that wait (and
// min_nodes), hosts are brought up in the pools file's order: the coordinator's bundle copied
// when the node lacks that checksum, `ablate-worker --check --json` run there (a failing check
// marks the host bad with the check's own words), the worker token written to a 0600 file over
// the channel, and the worker started detached in a session of its own (setsid), under a small
// sh wrapper that records its pid and exit status. A worker that exits unasked is restarted
// with backoff; a host whose starts keep failing, or whose SSH refuses us (host key, key), is
// marked bad and left alone. A node's worker idle for idle_exit while no run wants it is sent
// SIGTERM (it releases and exits). A restarted coordinator finds the workers it started (the
// node's files) and adopts them; they reconnect by themselves.
//
// On the node, under worker.work_dir: ssh-KEY/current (the incarnation started last), and per
// incarnation ssh-KEY/N/{run.sh,pid,exit,worker.log,work/}; the token at ssh-KEY/token; the
// default data dir ssh-KEY/data. Every incarnation is a new worker start; the worker id is
// ssh/POOL/KEY, its incarnation in Hello.ssh.
//
// Poll runs on one thread (the manager's loop); the rest is thread-safe.
#ifndef ABLATE_SERVER_POOLS_SSH_PROVIDER_H_
#define ABLATE_SERVER_POOLS_SSH_PROVIDER_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/dispatch/dispatcher.h"
#include "server/pools/command_runner.h"
#include "server/pools/pool_provider.h"
#include "server/pools/ssh_transport.h"

namespace ablate {

struct SshProviderOptions {
  std::string coordinator_address;  // HOST:PORT the workers dial
  std::string control_dir;          // ssh master sockets (short path)
  int64_t poll_ms = 5000;
  int64_t backoff_ms = 2000;        // the first retry after a failure; doubled per failure
  int64_t max_backoff_ms = 60000;
  int max_failures = 5;             // starts in a row that failed before a host is bad
  std::chrono::milliseconds command_timeout = std::chrono::seconds(120);  // one ssh or scp call
};

class SshProvider : public PoolProvider {
 public:
  // `dispatcher` must outlive the provider. The worker token is read from the pool's
  // worker.token_file here (a failure is the pool's error; nothing is started).
  SshProvider(PoolConfig pool, Dispatcher* dispatcher, SshProviderOptions options);
  ~SshProvider() override;  // closes the master connections; the workers keep running

  int64_t poll_ms() const override { return options_.poll_ms; }
  int64_t min_poll_ms() const override { return 0; }
  std::vector<std::string> pools() const override { return {config_.name}; }
  void Poll(const std::map<std::string, PoolWant>& want, int64_t seen_ms) override;
  // One node per run: a run that spans nodes is refused.
  absl::Status CheckShape(const PoolConfig& config, int nodes, int gpus_per_run) override;
  std::vector<PoolStatus> Snapshot() const override;
  std::string Waiting(const std::string& pool) const override;
  // drain: the host's worker takes no new runs and is stopped once idle; release: it is stopped
  // now (SIGTERM: it gives its runs back, requeued uncharged); both hold the host down until
  // resume, which also gives a host marked bad another try. `host` "" is every host.
  absl::StatusOr<std::string> Act(const std::string& pool, const std::string& host,
                                  const std::string& action) override;
  int64_t commands() const override;

 private:
  struct Host {
    SshHost host;
    std::unique_ptr<SshTransport> ssh;
    SshHostStatus status;  // what Snapshot shows, copied under mu_ by Publish
    int failures = 0;      // failed starts (or unasked exits) in a row
    int64_t idle_since_ms = 0;
    bool fenced = false;   // its worker was fenced (host unreachable): restart once reachable
  };
  // What the node's files say of its worker.
  struct Seen {
    enum Kind { kNone, kRunning, kExited } kind = kNone;
    int64_t incarnation = 0;
    int exit_status = -1;  // kExited: the worker's status; -1 when the wrapper is gone too
    std::string log_tail;  // kExited: the end of its log
  };
  std::string NodeDir(const Host& h) const;
  absl::StatusOr<Seen> Observe(Host& h);
  // Push, preflight, token, start; on success the host is up with incarnation + 1.
  absl::Status BringUp(Host& h, int64_t now_ms);
  absl::Status StopWorker(Host& h);
  void SetState(Host& h, const std::string& state, int64_t now_ms);
  void Failed(Host& h, const std::string& error, bool retry_helps, int64_t now_ms);
  void Publish(const std::map<int, int>& wanted, int64_t seen_ms);
  CommandOutput Counted(const CommandOutput& out);

  const PoolConfig config_;
  Dispatcher* const dispatcher_;
  const SshProviderOptions options_;
  ProcessRunner runner_;
  std::string token_;
  std::string token_error_;
  std::vector<Host> hosts_;  // the loop's own
  std::map<std::string, std::string> holds_seen_;  // the loop's copy of holds_ for this pass

  mutable absl::Mutex mu_;
  std::vector<SshHostStatus> published_ ABSL_GUARDED_BY(mu_);
  std::map<int, int> wanted_ ABSL_GUARDED_BY(mu_);
  int64_t polled_ms_ ABSL_GUARDED_BY(mu_) = 0;
  std::string waiting_ ABSL_GUARDED_BY(mu_);
  int64_t calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::string> holds_ ABSL_GUARDED_BY(mu_);  // host key -> drain|release
  std::set<std::string> resumed_ ABSL_GUARDED_BY(mu_);  // host keys resumed since the last pass
};

}  // namespace ablate

#endif  // ABLATE_SERVER_POOLS_SSH_PROVIDER_H_
