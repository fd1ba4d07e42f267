// Submitting and expanding a 2,000-run sweep (a 20×20 grid × 5 seeds) end to end: gRPC into a
// real ablate-coordinator process with a SQLite file. Prints wall times and their ratios against
// two baselines measured in the same run: a dry run of the same spec (parse + expand + RPC, no
// storage) and a one-run sweep (fixed RPC and transaction cost).
// A refused submit, or one that expands to another number of runs than the spec's (2,000 and 1),
// stops the bench with a non-zero exit and no figures.
// Usage: submit_bench [repetitions]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <csignal>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "ablate/v1/client.grpc.pb.h"
#include "tests/util/subprocess.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string GridSpec(const std::string& name, int side, int seeds) {
  std::ostringstream s;
  s << "name: " << name << "\nbaseline: {preset: r20-sub3min, scale: full}\nseeds: " << seeds
    << "\ngpus_per_run: 8\ninclude_baseline: false\ngrid:\n  muon.lr: [";
  for (int i = 0; i < side; ++i) s << (i ? ", " : "") << 0.01 + 0.002 * i;
  s << "]\n  logit_softcap: [";
  for (int i = 0; i < side; ++i) s << (i ? ", " : "") << 10 + i;
  s << "]\n";
  return s.str();
}

double SubmitMs(ablate::v1::AblateService::Stub& stub, const std::string& spec, bool dry,
                int* runs) {
  ablate::v1::SubmitSweepRequest req;
  req.set_spec_yaml(spec);
  req.set_file_name("bench.yaml");
  req.set_dry_run(dry);
  ablate::v1::SubmitSweepResponse resp;
  grpc::ClientContext ctx;
  auto t0 = Clock::now();
  grpc::Status s = stub.SubmitSweep(&ctx, req, &resp);
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  if (!s.ok()) {
    std::cerr << "submit failed: " << s.error_message() << "\n";
    std::exit(1);
  }
  *runs = resp.runs_size();
  return ms;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 5;
  ablate::testing::TempDir dir;
  ablate::testing::Subprocess coord(
      {ABLATE_COORDINATOR_BIN, "--listen", "127.0.0.1:0", "--data-dir", dir.path(), "--port-file",
       dir.path() + "/port", "--http", "off"},
      dir.path());
  for (int i = 0; i < 500 && !std::filesystem::exists(dir.path() + "/port"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::string port = ablate::testing::ReadFile(dir.path() + "/port");
  auto channel = grpc::CreateChannel("127.0.0.1:" + port.substr(0, port.find('\n')),
                                     grpc::InsecureChannelCredentials());
  auto stub = ablate::v1::AblateService::NewStub(channel);

  std::vector<double> full, dry, one;
  int runs = 0, one_runs = 0;
  SubmitMs(*stub, GridSpec("warmup", 2, 1), false, &one_runs);
  for (int r = 0; r < reps; ++r) {
    dry.push_back(SubmitMs(*stub, GridSpec("grid-" + std::to_string(r), 20, 5), true, &runs));
    full.push_back(SubmitMs(*stub, GridSpec("grid-" + std::to_string(r), 20, 5), false, &runs));
    one.push_back(SubmitMs(*stub, GridSpec("one-" + std::to_string(r), 1, 1), false, &one_runs));
    if (runs != 2000 || one_runs != 1) {
      std::cerr << "submit_bench: the grid expanded to " << runs << " runs (2000 expected) and the "
                << "1-run sweep to " << one_runs << "; no figures\n";
      return 1;
    }
  }
  double f = Median(full), d = Median(dry), o = Median(one);
  std::cout << "submit of a " << runs << "-run grid sweep, median of " << reps << ":\n"
            << "  stored:       " << f << " ms  (target < 1000 ms)\n"
            << "  dry run:      " << d << " ms  -> storing costs " << f / d << "x the dry run\n"
            << "  1-run sweep:  " << o << " ms  -> the grid costs " << f / o << "x a 1-run sweep"
            << " (" << (f - o) / runs * 1000 << " us per extra run)\n";
  coord.Signal(SIGTERM);
  coord.Wait(std::chrono::seconds(10));
  return 0;
}
