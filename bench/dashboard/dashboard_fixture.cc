// Writes the render benchmark's store: sweep 1 with R runs x S steps (R/5 variants x 5 seeds, all
// finished) and sweep 2 with one run of S steps, the baseline page.
//
//   dashboard_fixture DATA_DIR [runs=50] [steps=3000]
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "tests/http/sweep_fixture.h"

int main(int argc, char** argv) {
  if (argc < 2)
    return std::fprintf(stderr, "usage: dashboard_fixture DATA_DIR [runs] [steps]\n"), 2;
  const std::string dir = argv[1];
  const int runs = argc > 2 ? std::atoi(argv[2]) : 50;
  const int steps = argc > 3 ? std::atoi(argv[3]) : 3000;
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/ablate.db");
  absl::StatusOr<std::unique_ptr<ablate::Store>> store = ablate::Store::Open(dir + "/ablate.db");
  if (!store.ok()) return std::fprintf(stderr, "%s\n", store.status().ToString().c_str()), 1;
  ablate::testing::FixtureShape many;
  many.seeds = 5;
  many.variants = std::max(1, runs / many.seeds);
  many.steps = steps;
  many.val_every = 125;
  ablate::testing::FixtureShape one = many;
  one.variants = 1;
  one.seeds = 1;
  for (auto [name, shape] : {std::pair{"render-50", many}, std::pair{"render-1", one}}) {
    absl::Status s = ablate::testing::MakeFixtureSweep(**store, name, shape).status();
    if (!s.ok()) return std::fprintf(stderr, "%s\n", s.ToString().c_str()), 1;
  }
  std::printf("%s/ablate.db: sweep 1 = %d runs x %d steps, sweep 2 = 1 run\n", dir.c_str(),
              many.variants * many.seeds, steps);
  return 0;
}
