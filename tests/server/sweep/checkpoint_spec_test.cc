// The sweep spec's `checkpoint_every:` (issue 17): durations as the pools file writes them, kept
// on the sweep; a bare number, a non-duration, a period under a second and a non-scalar are
// rejected with the key's file:line:column.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

std::string Spec(const std::string& every_line) {
  return "name: ckpt\nbaseline: {preset: r9-shortcuts, scale: tiny}\nseeds: 2\n" + every_line;
}

int64_t EveryMs(const std::string& text) {
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(Spec("checkpoint_every: " + text + "\n"), "s.yaml");
  EXPECT_TRUE(r.ok()) << text << ": " << r.status();
  return r.ok() ? r->sweep.checkpoint_every_ms : -1;
}

TEST(CheckpointEvery, DurationsAreKeptOnTheSweepInMs) {
  EXPECT_EQ(EveryMs("10m"), 600000);
  EXPECT_EQ(EveryMs("90s"), 90000);
  EXPECT_EQ(EveryMs("1h"), 3600000);
  EXPECT_EQ(EveryMs("1500ms"), 1500);
  EXPECT_EQ(EveryMs("\"30s\""), 30000);
  EXPECT_EQ(EveryMs("1.5s"), 1500);  // the grammar of ablate-train --checkpoint-every too
}

TEST(CheckpointEvery, AbsentMeansNoCheckpoints) {
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(Spec(""), "s.yaml");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->sweep.checkpoint_every_ms, 0);
}

// The first error line is "s.yaml:4:COL: checkpoint_every: ..." and says each phrase.
void ExpectRejected(const std::string& value, const std::string& column,
                    const std::vector<std::string>& phrases) {
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(Spec("checkpoint_every: " + value + "\n"), "s.yaml");
  ASSERT_FALSE(r.ok()) << value << " was accepted";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  std::string message(r.status().message());
  std::string first = message.substr(0, message.find('\n'));
  EXPECT_TRUE(first.starts_with("s.yaml:4:" + column + ": checkpoint_every: ")) << first;
  for (const std::string& p : phrases) {
    EXPECT_NE(first.find(p), std::string::npos) << "'" << p << "' not in: " << first;
  }
}

TEST(CheckpointEvery, BadValuesNameTheKeyAndWhy) {
  ExpectRejected("10", "19", {"'10' has no unit", "write 10s for seconds"});
  ExpectRejected("ten-minutes", "19", {"'ten-minutes' is not a duration", "500ms, 30s, 5m or 2h"});
  ExpectRejected("10min", "19", {"not a duration"});
  ExpectRejected("600steps", "19", {"'600steps' is not a duration"});
  ExpectRejected("-5m", "19", {"not a duration"});
  ExpectRejected("500ms", "19", {"too often", "at least 1s"});
  ExpectRejected("0s", "19", {"too often"});
  ExpectRejected("[10m]", "19", {"checkpoint_every"});
}

TEST(CheckpointEvery, AMisspelledKeySuggestsIt) {
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(Spec("checkpoint_evry: 10m\n"), "s.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("did you mean 'checkpoint_every'"), std::string::npos)
      << r.status();
}

}  // namespace
}  // namespace ablate
