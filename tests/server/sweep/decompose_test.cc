// Decomposing a record (issue 29): the diff of two scripts split into changes (hunks, markers,
// groups), FROM rebuilt with any subset, the variants' change sets, and the `decompose:` spec key
// expanded through the one script-sweep path.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <set>

#include "server/sweep/script_changes.h"
#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

using J = nlohmann::json;

// 40 numbered lines; `edits` replaces line i (1-based) with its text ("" removes it).
std::string Script(const std::map<int, std::string>& edits = {}, bool final_newline = true) {
  std::string out;
  for (int i = 1; i <= 40; ++i) {
    auto it = edits.find(i);
    if (it == edits.end()) {
      out += "x" + std::to_string(i) + " = " + std::to_string(i) + "\n";
    } else if (!it->second.empty()) {
      out += it->second + "\n";
    }
  }
  if (!final_newline) out.pop_back();
  return out;
}

TEST(ScriptChangesTest, DistantEditsAreOneChangeEachAndRebuildAnySubset) {
  const std::string from = Script();
  const std::string to = Script({{3, "x3 = 30"}, {15, "x15 = 150"}, {30, ""}});
  absl::StatusOr<ChangeSplit> split = SplitChanges(from, to, {});
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ(split->changes.size(), 3u);
  EXPECT_EQ(split->changes[0].name, "L3");
  EXPECT_EQ(split->changes[1].name, "L15");
  EXPECT_EQ(split->changes[2].name, "L29");  // a removal: named by the TO line before it
  EXPECT_EQ(split->changes[2].named_by, "line");
  EXPECT_EQ(*ApplyChanges(from, *split, {}), from);
  EXPECT_EQ(*ApplyChanges(from, *split, {0, 1, 2}), to);
  EXPECT_EQ(*ApplyChanges(from, *split, {1}), Script({{15, "x15 = 150"}}));
  EXPECT_EQ(*ApplyChanges(from, *split, {0, 2}), Script({{3, "x3 = 30"}, {30, ""}}));
  EXPECT_FALSE(ApplyChanges(from, *split, {3}).ok());
}

TEST(ScriptChangesTest, EditsWithinSixLinesAreOneHunk) {
  const std::string from = Script();
  absl::StatusOr<ChangeSplit> near = SplitChanges(from, Script({{10, "a"}, {17, "b"}}), {});
  ASSERT_TRUE(near.ok());
  EXPECT_EQ(near->changes.size(), 1u);
  EXPECT_EQ(near->changes[0].hunks, 1);
  absl::StatusOr<ChangeSplit> far = SplitChanges(from, Script({{10, "a"}, {18, "b"}}), {});
  ASSERT_TRUE(far.ok());
  EXPECT_EQ(far->changes.size(), 2u);
}

TEST(ScriptChangesTest, MarkersAndGroupsMergeHunks) {
  const std::string from = Script();
  const std::string to = Script({{3, "x3 = 30  # ablate-change: lr"},
                                 {15, "x15 = 0"},
                                 {25, "x25 = 2  # ablate-change: lr"},
                                 {36, "x36 = 9"}});
  absl::StatusOr<ChangeSplit> marked = SplitChanges(from, to, {});
  ASSERT_TRUE(marked.ok());
  ASSERT_EQ(marked->changes.size(), 3u);
  EXPECT_EQ(marked->changes[0].name, "lr");
  EXPECT_EQ(marked->changes[0].named_by, "marker");
  EXPECT_EQ(marked->changes[0].hunks, 2);
  EXPECT_EQ(*ApplyChanges(from, *marked, {0}),
            Script({{3, "x3 = 30  # ablate-change: lr"}, {25, "x25 = 2  # ablate-change: lr"}}));

  absl::StatusOr<ChangeGroup> g = ParseChangeGroup("tail=15,30-40");
  ASSERT_TRUE(g.ok()) << g.status();
  absl::StatusOr<ChangeSplit> grouped = SplitChanges(from, to, {*g});
  ASSERT_TRUE(grouped.ok());
  ASSERT_EQ(grouped->changes.size(), 2u);
  EXPECT_EQ(grouped->changes[1].name, "tail");
  EXPECT_EQ(grouped->changes[1].named_by, "group");
  EXPECT_EQ(grouped->changes[1].to_first, 15);
  EXPECT_EQ(grouped->changes[1].to_last, 36);
}

TEST(ScriptChangesTest, BadGroupsAreRefusedWithTheReason) {
  EXPECT_NE(ParseChangeGroup("noequals").status().message().find("NAME=RANGES"),
            std::string::npos);
  EXPECT_NE(ParseChangeGroup("a=5-2").status().message().find("FIRST-LAST"), std::string::npos);
  EXPECT_NE(ParseChangeGroup("a b=5").status().message().find("invalid"), std::string::npos);
  const std::string from = Script(), to = Script({{3, "y"}, {20, "z"}});
  absl::StatusOr<ChangeSplit> unused = SplitChanges(from, to, {*ParseChangeGroup("g=10-12")});
  EXPECT_NE(unused.status().message().find("meets no changed line"), std::string::npos);
  absl::StatusOr<ChangeSplit> both =
      SplitChanges(from, to, {*ParseChangeGroup("g=3"), *ParseChangeGroup("h=1-4")});
  EXPECT_NE(both.status().message().find("both claim"), std::string::npos);
  EXPECT_FALSE(SplitChanges(from, from, {}).ok());
}

TEST(ScriptChangesTest, AFinalLineWithoutNewlineIsRebuiltByteForByte) {
  const std::string from = Script({}, false);
  const std::string to = Script({{5, "five"}, {40, "x40 = 41"}}, false);
  absl::StatusOr<ChangeSplit> split = SplitChanges(from, to, {});
  ASSERT_TRUE(split.ok());
  ASSERT_EQ(split->changes.size(), 2u);
  EXPECT_EQ(*ApplyChanges(from, *split, {0, 1}), to);
  EXPECT_EQ(*ApplyChanges(from, *split, {1}), Script({{40, "x40 = 41"}}, false));
}

std::vector<ScriptChange> Named(std::vector<std::string> names) {
  std::vector<ScriptChange> out;
  for (std::string& n : names) out.push_back({std::move(n), "line", {}, 1, 0, 0, 0, 0});
  return out;
}

TEST(ScriptChangesTest, VariantsWithTheSameChangesAreOne) {
  std::vector<DecomposeVariant> one = DecomposeVariants(Named({"a"}));
  ASSERT_EQ(one.size(), 1u);  // TO = add-a; drop-a is FROM
  EXPECT_EQ(one[0].roles, (std::vector<std::string>{"to", "add-a"}));
  std::vector<DecomposeVariant> two = DecomposeVariants(Named({"a", "b"}));
  ASSERT_EQ(two.size(), 3u);
  EXPECT_EQ(two[1].name, "add-a");
  EXPECT_EQ(two[1].roles, (std::vector<std::string>{"add-a", "drop-b"}));
  std::vector<DecomposeVariant> three = DecomposeVariants(Named({"a", "b", "c"}));
  ASSERT_EQ(three.size(), 7u);
  EXPECT_EQ(three[6].name, "drop-c");
  EXPECT_EQ(three[6].changes, (std::vector<int>{0, 1}));
}

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
  const std::string from = Script(), to = Script({{3, "y"}, {15, "z"}, {33, "w"}});
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
      EXPECT_EQ(files[0].content, Script({{3, "y"}, {33, "w"}}));
    }
  }
  EXPECT_EQ(snapshots.size(), 8u);
}

TEST(DecomposeSpecTest, ProblemsAreReportedAtTheKey) {
  const std::string from = Script(), to = Script({{3, "y"}});
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
      ParseSweepSpec(with_ablations, "d.yaml", Uploads(from, Script({{3, "y"}, {33, "w"}})));
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
                     Uploads(Script(), Script({{3, "y"}, {20, "z"}})));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->variants.size(), 4u);  // baseline, to, add-L3 (= drop-L20), add-L20
}

}  // namespace
}  // namespace ablate
