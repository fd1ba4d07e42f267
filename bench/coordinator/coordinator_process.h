// A real ablate-coordinator child process for the coordinator benchmarks: started on
// 127.0.0.1:0 with a temporary data dir, stopped with SIGTERM when the object dies. Also the
// client-side helpers the benchmarks share (sweep specs, SubmitSweep, percentiles).
#ifndef ABLATE_BENCH_COORDINATOR_COORDINATOR_PROCESS_H_
#define ABLATE_BENCH_COORDINATOR_COORDINATOR_PROCESS_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ablate/v1/client.grpc.pb.h"
#include "absl/status/status.h"
#include "tests/util/subprocess.h"

namespace ablate::bench {

struct CoordinatorOptions {
  // Serve the dashboard on 127.0.0.1:0 too (http_port()); "--http off" otherwise.
  bool http = false;
  std::vector<std::string> extra_args;  // more flags for the coordinator
};

class CoordinatorProcess {
 public:
  // Starts `binary` and waits (up to 5 s) for its port file(s). Check ok() before use.
  explicit CoordinatorProcess(const std::string& binary, CoordinatorOptions options = {});
  ~CoordinatorProcess();  // SIGTERM, then waits up to 10 s
  CoordinatorProcess(const CoordinatorProcess&) = delete;
  CoordinatorProcess& operator=(const CoordinatorProcess&) = delete;

  bool ok() const { return !target_.empty(); }
  // "127.0.0.1:<port>".
  const std::string& target() const { return target_; }
  // The dashboard's port (CoordinatorOptions::http), else 0.
  int http_port() const { return http_port_; }
  int pid() const { return process_->pid(); }
  // A new channel on its own TCP connection (each simulated worker gets one, as real ones do).
  std::shared_ptr<grpc::Channel> NewChannel() const;
  std::string Stderr() const { return process_->Stderr(); }

 private:
  testing::TempDir dir_;
  std::unique_ptr<testing::Subprocess> process_;
  std::string target_;
  int http_port_ = 0;
};

// The most seeds one spec may have (server/sweep/spec_reader.cc): a bench that needs more runs
// submits several sweeps (SweepSizes).
inline constexpr int kMaxSeedsPerSweep = 1000;

// A CPU-only sweep of `runs` runs (the baseline with `runs` seeds, 1..kMaxSeedsPerSweep) on the
// dataset "bench", configured for `steps` training steps (num_iterations, at least 1): a run may
// report steps 0..steps; a point past that is refused with a Cancel, so a bench configures its
// runs for every step it sends.
std::string BenchSweepSpec(const std::string& name, int runs, int64_t steps);

// `runs` split into sweeps of at most kMaxSeedsPerSweep runs, as evenly as possible.
std::vector<int> SweepSizes(int runs);

// OK when the sweep `sweep_id` (0 = every sweep) has exactly `expected_runs` runs, every one of
// them ended RUN_SUCCEEDED and, when `points_per_run` >= 0, has exactly that many points stored
// (GetMetrics total_points); otherwise FAILED_PRECONDITION naming the count and the first runs
// that did not succeed (state and error) or miss points, or the RPC's error. A bench calls it
// after the work it timed, and reports no figure when it fails.
absl::Status CheckRunsSucceeded(v1::AblateService::Stub& stub, int64_t sweep_id, int expected_runs,
                                int64_t points_per_run = -1);

// Submits `spec`; nullopt (after printing the error) when the RPC fails.
std::optional<v1::SubmitSweepResponse> SubmitSweep(v1::AblateService::Stub& stub,
                                                   const std::string& spec);

// The q-quantile (0 <= q <= 1, nearest rank) of `values`; 0 when empty.
double Percentile(std::vector<double> values, double q);

}  // namespace ablate::bench

#endif  // ABLATE_BENCH_COORDINATOR_COORDINATOR_PROCESS_H_
