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

std::string BenchSweepSpec(const std::string& name, int runs) {
  std::ostringstream s;
  s << "name: " << name << "\nbaseline: {preset: r9-shortcuts, scale: tiny}\nseeds: " << runs
    << "\ngpus_per_run: 0\ndataset: bench\nmax_attempts: 1\n";
  return s.str();
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
