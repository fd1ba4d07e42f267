// Decomposing a record (issue 29): the `decompose:` spec key expanded through the one
// script-sweep path (the splitting itself: tests/common/script_changes_test.cc).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "server/sweep/sweep_spec.h"
#include "tests/common/numbered_script.h"

namespace ablate {
namespace {

using J = nlohmann::json;

using ::ablate::testing::NumberedScript;

constexpr char kSpec[] = R"(name: decomp
baseline: {args: ["--quick"]}
seeds: 2
decompose:
  from: a.py
  to: b.py
  groups: {tail: "30-40"}
)";

ScriptUploads Uploads(const std::string& from, const std::string& to) {
  return {{"a.py", ScriptUpload{"", {{"a.py", from, false}}}},
          {"b.py", ScriptUpload{"", {{"b.py", to, false}}}}};
}

TEST(DecomposeSpecTest, ExpandsIntoFromToAddOneInAndLeaveOneOut) {
  const std::string from = NumberedScript(), to = NumberedScript({{3, "y"}, {15, "z"}, {33, "w"}});
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(kSpec, "d.yaml", Uploads(from, to));
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> names;
  for (const Variant& v : r->variants) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"baseline", "to", "add-L3", "add-L15", "add-tail",
                                             "drop-L3", "drop-L15", "drop-tail"}));
  EXPECT_EQ(r->runs.size(), 16u);
  std::set<std::string> snapshots;
  for (const Variant& v : r->variants) {
    J config = J::parse(v.config_json);
    EXPECT_EQ(config["script"]["path"], "a.py") << v.name;
    EXPECT_EQ(config["script"]["args"], J::array({"--quick"})) << v.name;
    snapshots.insert(config["script"]["snapshot"].get<std::string>());
    const Snapshot& files = r->snapshots.at(config["script"]["snapshot"]);
    ASSERT_EQ(files.size(), 1u);
    if (v.name == "to") {
      EXPECT_EQ(files[0].content, to);
    }
    if (v.name == "baseline") {
      EXPECT_EQ(files[0].content, from);
      continue;
    }
    J d = J::parse(v.diff_json)["script"]["decompose"];
    EXPECT_EQ(d["all"], J::array({"L3", "L15", "tail"})) << v.name;
    if (v.name == "drop-L15") {
      EXPECT_EQ(d["changes"], J::array({"L3", "tail"}));
      EXPECT_EQ(files[0].content, NumberedScript({{3, "y"}, {33, "w"}}));
    }
  }
  EXPECT_EQ(snapshots.size(), 8u);
}

TEST(DecomposeSpecTest, ProblemsAreReportedAtTheKey) {
  const std::string from = NumberedScript(), to = NumberedScript({{3, "y"}});
  absl::StatusOr<ExpandedSweep> missing = ParseSweepSpec(kSpec, "d.yaml", {});
  EXPECT_NE(missing.status().message().find("d.yaml:5:9: decompose.from: the file 'a.py' did "
                                            "not come with the spec"),
            std::string::npos)
      << missing.status();
  absl::StatusOr<ExpandedSweep> unused_group = ParseSweepSpec(kSpec, "d.yaml", Uploads(from, to));
  EXPECT_NE(unused_group.status().message().find("group 'tail' meets no changed line"),
            std::string::npos)
      << unused_group.status();
  const std::string with_ablations = std::string(kSpec) + "ablations: [{name: x, args: []}]\n";
  absl::StatusOr<ExpandedSweep> both =
      ParseSweepSpec(with_ablations, "d.yaml", Uploads(from, NumberedScript({{3, "y"}, {33, "w"}})));
  EXPECT_NE(both.status().message().find("ablations cannot go with decompose"), std::string::npos)
      << both.status();
  absl::StatusOr<ExpandedSweep> typo = ParseSweepSpec(
      "name: d\ndecompose: {from: a.py, too: b.py}\n", "d.yaml", Uploads(from, to));
  EXPECT_NE(typo.status().message().find("unknown key 'too'; did you mean 'to'"),
            std::string::npos)
      << typo.status();
  absl::StatusOr<ExpandedSweep> script = ParseSweepSpec(
      "name: d\nbaseline: {script: a.py}\ndecompose: {from: a.py, to: b.py}\n", "d.yaml",
      Uploads(from, to));
  EXPECT_NE(script.status().message().find("remove baseline.script"), std::string::npos)
      << script.status();
}

TEST(DecomposeSpecTest, NoBaselineMapIsNeeded) {
  absl::StatusOr<ExpandedSweep> r =
      ParseSweepSpec("name: d\ndecompose: {from: a.py, to: b.py}\n", "d.yaml",
                     Uploads(NumberedScript(), NumberedScript({{3, "y"}, {20, "z"}})));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->variants.size(), 4u);  // baseline, to, add-L3 (= drop-L20), add-L20
}

}  // namespace
}  // namespace ablate
