// Decomposing a record (issue 29): the diff of two scripts split into changes (hunks, markers,
// groups), FROM rebuilt with any subset, and the variants' change sets (common/decompose/).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/decompose/script_changes.h"
#include "tests/common/numbered_script.h"

namespace ablate {
namespace {

using ::ablate::testing::NumberedScript;

TEST(ScriptChangesTest, DistantEditsAreOneChangeEachAndRebuildAnySubset) {
  const std::string from = NumberedScript();
  const std::string to = NumberedScript({{3, "x3 = 30"}, {15, "x15 = 150"}, {30, ""}});
  absl::StatusOr<ChangeSplit> split = SplitChanges(from, to, {});
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ(split->changes.size(), 3u);
  EXPECT_EQ(split->changes[0].name, "L3");
  EXPECT_EQ(split->changes[1].name, "L15");
  EXPECT_EQ(split->changes[2].name, "L29");  // a removal: named by the TO line before it
  EXPECT_EQ(split->changes[2].named_by, "line");
  EXPECT_EQ(*ApplyChanges(from, *split, {}), from);
  EXPECT_EQ(*ApplyChanges(from, *split, {0, 1, 2}), to);
  EXPECT_EQ(*ApplyChanges(from, *split, {1}), NumberedScript({{15, "x15 = 150"}}));
  EXPECT_EQ(*ApplyChanges(from, *split, {0, 2}), NumberedScript({{3, "x3 = 30"}, {30, ""}}));
  EXPECT_FALSE(ApplyChanges(from, *split, {3}).ok());
}

TEST(ScriptChangesTest, EditsWithinSixLinesAreOneHunk) {
  const std::string from = NumberedScript();
  absl::StatusOr<ChangeSplit> near = SplitChanges(from, NumberedScript({{10, "a"}, {17, "b"}}), {});
  ASSERT_TRUE(near.ok());
  EXPECT_EQ(near->changes.size(), 1u);
  EXPECT_EQ(near->changes[0].hunks, 1);
  absl::StatusOr<ChangeSplit> far = SplitChanges(from, NumberedScript({{10, "a"}, {18, "b"}}), {});
  ASSERT_TRUE(far.ok());
  EXPECT_EQ(far->changes.size(), 2u);
}

TEST(ScriptChangesTest, MarkersAndGroupsMergeHunks) {
  const std::string from = NumberedScript();
  const std::string to = NumberedScript({{3, "x3 = 30  # ablate-change: lr"},
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
            NumberedScript({{3, "x3 = 30  # ablate-change: lr"}, {25, "x25 = 2  # ablate-change: lr"}}));

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
  const std::string from = NumberedScript(), to = NumberedScript({{3, "y"}, {20, "z"}});
  absl::StatusOr<ChangeSplit> unused = SplitChanges(from, to, {*ParseChangeGroup("g=10-12")});
  EXPECT_NE(unused.status().message().find("meets no changed line"), std::string::npos);
  absl::StatusOr<ChangeSplit> both =
      SplitChanges(from, to, {*ParseChangeGroup("g=3"), *ParseChangeGroup("h=1-4")});
  EXPECT_NE(both.status().message().find("both claim"), std::string::npos);
  EXPECT_FALSE(SplitChanges(from, from, {}).ok());
}

TEST(ScriptChangesTest, AFinalLineWithoutNewlineIsRebuiltByteForByte) {
  const std::string from = NumberedScript({}, false);
  const std::string to = NumberedScript({{5, "five"}, {40, "x40 = 41"}}, false);
  absl::StatusOr<ChangeSplit> split = SplitChanges(from, to, {});
  ASSERT_TRUE(split.ok());
  ASSERT_EQ(split->changes.size(), 2u);
  EXPECT_EQ(*ApplyChanges(from, *split, {0, 1}), to);
  EXPECT_EQ(*ApplyChanges(from, *split, {1}), NumberedScript({{40, "x40 = 41"}}, false));
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

}  // namespace
}  // namespace ablate
