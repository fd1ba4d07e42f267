// CoordinatorProcess and the shared client helpers of the coordinator benchmarks.
#include "bench/coordinator/coordinator_process.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

namespace ablate::bench {

namespace {

// The first line of `path` once it has one; "" after 5 s.
std::string WaitForPortFile(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    if (std::filesystem::exists(path)) {
      std::string port = testing::ReadFile(path);
      port = port.substr(0, port.find('\n'));
      if (!port.empty()) return port;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "";
}

}  // namespace

CoordinatorProcess::CoordinatorProcess(const std::string& binary, CoordinatorOptions options) {
  const std::string port_file = dir_.path() + "/port";
  const std::string http_port_file = dir_.path() + "/http_port";
  std::vector<std::string> argv = {binary, "--listen", "127.0.0.1:0", "--data-dir", dir_.path(),
                                   "--port-file", port_file};
  if (options.http) {
    argv.insert(argv.end(), {"--http", "127.0.0.1:0", "--http-port-file", http_port_file});
  } else {
    argv.insert(argv.end(), {"--http", "off"});
  }
  argv.insert(argv.end(), options.extra_args.begin(), options.extra_args.end());
  process_ = std::make_unique<testing::Subprocess>(argv, dir_.path());
  std::string port = WaitForPortFile(port_file);
  std::string http_port = options.http ? WaitForPortFile(http_port_file) : "0";
  if (port.empty() || http_port.empty()) {
    std::cerr << "ablate-coordinator did not write its port file(s):\n" << process_->Stderr();
    return;
  }
  target_ = "127.0.0.1:" + port;
  http_port_ = std::stoi(http_port);
}

CoordinatorProcess::~CoordinatorProcess() {
  process_->Signal(SIGTERM);
  process_->Wait(std::chrono::seconds(10));
}

std::shared_ptr<grpc::Channel> CoordinatorProcess::NewChannel() const {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // no connection shared with others
  return grpc::CreateCustomChannel(target_, grpc::InsecureChannelCredentials(), args);
}

std::string BenchSweepSpec(const std::string& name, int runs, int64_t steps) {
  std::ostringstream s;
  s << "name: " << name << "\nbaseline: {preset: r9-shortcuts, scale: tiny, set: {num_iterations: "
    << std::max<int64_t>(steps, 1) << "}}\nseeds: " << runs
    << "\ngpus_per_run: 0\ndataset: bench\nmax_attempts: 1\n";
  return s.str();
}

std::vector<int> SweepSizes(int runs) {
  int sweeps = std::max(1, (runs + kMaxSeedsPerSweep - 1) / kMaxSeedsPerSweep);
  std::vector<int> sizes(size_t(sweeps), runs / sweeps);
  for (int i = 0; i < runs % sweeps; ++i) ++sizes[size_t(i)];
  return sizes;
}

namespace {

// Every run of `sweep_id` (0 = all), a page of 1000 at a time.
absl::Status ListAllRuns(v1::AblateService::Stub& stub, int64_t sweep_id,
                         std::vector<v1::Run>* runs) {
  for (;;) {
    v1::ListRunsRequest req;
    req.set_sweep_id(sweep_id);
    req.set_limit(1000);
    req.set_offset(static_cast<int32_t>(runs->size()));
    v1::ListRunsResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = stub.ListRuns(&ctx, req, &resp);
    if (!s.ok()) return absl::UnavailableError("ListRuns failed: " + s.error_message());
    runs->insert(runs->end(), resp.runs().begin(), resp.runs().end());
    if (resp.runs_size() < 1000) return absl::OkStatus();
  }
}

// The points stored for `run_id`, -1 (with *error) when GetMetrics fails.
int64_t StoredPoints(v1::AblateService::Stub& stub, int64_t run_id, std::string* error) {
  v1::GetMetricsRequest req;
  req.set_run_id(run_id);
  req.set_max_points(2);
  v1::GetMetricsResponse resp;
  grpc::ClientContext ctx;
  grpc::Status s = stub.GetMetrics(&ctx, req, &resp);
  if (!s.ok()) *error = "GetMetrics failed: " + s.error_message();
  return s.ok() ? resp.total_points() : -1;
}

}  // namespace

absl::Status CheckRunsSucceeded(v1::AblateService::Stub& stub, int64_t sweep_id, int expected_runs,
                                int64_t points_per_run) {
  std::vector<v1::Run> runs;
  if (absl::Status s = ListAllRuns(stub, sweep_id, &runs); !s.ok()) return s;
  std::ostringstream why;
  int bad = 0;
  for (const v1::Run& r : runs) {
    std::string error;
    int64_t points = points_per_run < 0 ? -1 : StoredPoints(stub, r.id(), &error);
    if (r.state() == v1::RUN_SUCCEEDED && points == points_per_run) continue;
    if (++bad > 5) continue;
    why << "; run " << r.id() << " is " << v1::RunState_Name(r.state())
        << (r.error().empty() ? "" : " (" + r.error() + ")");
    if (points != points_per_run) {
      why << " with " << points << " points stored of " << points_per_run << " " << error;
    }
  }
  if (bad == 0 && static_cast<int>(runs.size()) == expected_runs) return absl::OkStatus();
  std::ostringstream msg;
  msg << "sweep " << sweep_id << ": " << runs.size() << " runs (" << expected_runs << " expected), "
      << bad << " did not succeed or miss points" << why.str();
  return absl::FailedPreconditionError(msg.str());
}

std::optional<v1::SubmitSweepResponse> SubmitSweep(v1::AblateService::Stub& stub,
                                                   const std::string& spec) {
  v1::SubmitSweepRequest req;
  req.set_spec_yaml(spec);
  req.set_file_name("bench.yaml");
  v1::SubmitSweepResponse resp;
  grpc::ClientContext ctx;
  grpc::Status s = stub.SubmitSweep(&ctx, req, &resp);
  if (!s.ok()) {
    std::cerr << "SubmitSweep failed: " << s.error_message() << "\n";
    return std::nullopt;
  }
  return resp;
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(q * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(rank, values.size() - 1)];
}

}  // namespace ablate::bench
