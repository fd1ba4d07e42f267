// The `ablate` CLI against one coordinator, as the integration tests drive it: a plain run, a
// --json run parsed, polling a --json command until a condition holds, and submitting a spec.
// Header-only: it reports through GoogleTest, which every user links.
#ifndef ABLATE_TESTS_UTIL_CLI_CLIENT_H_
#define ABLATE_TESTS_UTIL_CLI_CLIENT_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/util/subprocess.h"

namespace ablate::testing {

class CliClient {
 public:
  CliClient() = default;
  CliClient(std::string bin, std::string address)
      : bin_(std::move(bin)), address_(std::move(address)) {}

  // `ablate --server ADDRESS args...` to completion.
  ProcessResult Run(std::vector<std::string> args) const {
    args.insert(args.begin(), {bin_, "--server", address_});
    return RunProcess(args);
  }

  // The parsed output of `ablate --json args...`; null when it failed or printed no JSON.
  nlohmann::json Json(std::vector<std::string> args) const {
    args.insert(args.begin(), "--json");
    ProcessResult r = Run(args);
    return r.exit_code == 0 ? nlohmann::json::parse(r.out, nullptr, false) : nlohmann::json();
  }

  // Polls `ablate --json args...` until `done` holds for its output; the last output either
  // way, with a test failure naming the command on timeout.
  nlohmann::json WaitFor(std::vector<std::string> args,
                         const std::function<bool(const nlohmann::json&)>& done,
                         std::chrono::seconds timeout) const {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    nlohmann::json j;
    while (std::chrono::steady_clock::now() < deadline) {
      j = Json(args);
      if (j.is_object() && done(j)) return j;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "timed out waiting for `ablate " << args[0] << "`; last: " << j.dump();
    return j;
  }

  // Writes `spec` to spec_path and submits it; a test failure when the CLI refuses it.
  void Submit(const std::string& spec_path, const std::string& spec) const {
    WriteFile(spec_path, spec);
    ProcessResult r = Run({"submit", spec_path});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }

 private:
  std::string bin_, address_;
};

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_UTIL_CLI_CLIENT_H_
