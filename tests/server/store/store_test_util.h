// Helpers shared by the store tests: a small sweep and its parts (TempDir from tests/util; the
// clock is common/clock.h's ManualClock).
#ifndef ABLATE_TESTS_SERVER_STORE_STORE_TEST_UTIL_H_
#define ABLATE_TESTS_SERVER_STORE_STORE_TEST_UTIL_H_

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/core/model.h"
#include "server/store/store.h"
#include "tests/util/subprocess.h"  // TempDir

namespace ablate::testing {

inline Sweep MakeSweep(const std::string& name, std::vector<std::string> tags = {}) {
  Sweep s;
  s.name = name;
  s.spec_yaml = "name: " + name + "\n";
  s.baseline_preset = "r20-sub3min";
  s.scale = "tiny";
  s.dataset = "fineweb10B";
  s.target_val_loss = 3.28;
  s.seeds = 2;
  s.gpus_per_run = 1;
  s.priority = 5;
  s.max_concurrent = 4;
  s.max_attempts = 2;
  s.tags = std::move(tags);
  return s;
}

// Variants "baseline" and "softcap-30", `seeds` runs each (Run::variant_id = variant index).
struct SweepParts {
  std::vector<Variant> variants;
  std::vector<Run> runs;
};

inline SweepParts MakeParts(int seeds = 2) {
  SweepParts parts;
  const char* names[] = {"baseline", "softcap-30"};
  for (int i = 0; i < 2; ++i) {
    Variant v;
    v.index = i;
    v.name = names[i];
    v.config_json = "{\"logit_softcap\":" + std::to_string(15 + 15 * i) + "}";
    v.config_hash = "hash" + std::to_string(i);
    v.diff_json = i == 0 ? "{}" : "{\"logit_softcap\":[15,30]}";
    parts.variants.push_back(v);
    for (int seed = 0; seed < seeds; ++seed) {
      Run r;
      r.variant_id = i;
      r.seed = seed;
      parts.runs.push_back(r);
    }
  }
  return parts;
}

// Creates a sweep with MakeParts(seeds) and returns its id (fails the test on error).
inline int64_t AddSweep(Store& store, const std::string& name, std::vector<std::string> tags = {},
                        int seeds = 2) {
  SweepParts parts = MakeParts(seeds);
  absl::StatusOr<int64_t> id =
      store.CreateSweep(MakeSweep(name, std::move(tags)), parts.variants, parts.runs);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.value_or(0);
}

inline AttemptResult ResultOf(AttemptState state, std::string error = "") {
  AttemptResult result;
  result.state = state;
  result.exit_code = state == AttemptState::kFailed ? 1 : 0;
  result.error = std::move(error);
  return result;
}

inline std::unique_ptr<Store> OpenOrDie(const std::string& path, StoreOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path, std::move(options));
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? std::move(*store) : nullptr;
}

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_SERVER_STORE_STORE_TEST_UTIL_H_
