// The one CheckedEntries (common/spec/checked_entries.h) that sweep specs and the pools file both
// read their maps with: unknown keys with suggestions, repeats, a non-map, and the key cap.
#include "common/spec/checked_entries.h"

#include <gtest/gtest.h>

#include <string>

#include "common/spec/spec_document.h"
#include "common/spec/spec_prescan.h"

namespace ablate {
namespace {

constexpr std::string_view kKeys[] = {"name", "partition", "worker"};

struct Checked {
  SpecEntries entries;
  std::string errors;  // "" when none
};

Checked Check(const std::string& yaml) {
  SpecErrors errors("f.yaml", yaml);
  Checked out;
  EXPECT_TRUE(PrescanSpec(yaml, &errors));
  std::optional<YAML::Node> root = LoadSpecDocument(yaml, &errors);
  EXPECT_TRUE(root.has_value());
  if (root) out.entries = CheckedEntries(*root, "top", kKeys, &errors);
  out.errors = std::string(errors.ToStatus().message());
  return out;
}

TEST(CheckedEntries, KnownKeysAreKeptWithTheirKeyNodes) {
  Checked c = Check("name: a\nworker: {x: 1}\n");
  EXPECT_EQ(c.errors, "");
  ASSERT_EQ(c.entries.size(), 2u);
  EXPECT_EQ(c.entries.at("name").value.Scalar(), "a");
  EXPECT_EQ(PositionOf(c.entries.at("worker").key).line, 2);
  EXPECT_TRUE(c.entries.at("worker").value.IsMap());
}

TEST(CheckedEntries, UnknownKeysSuggestTheClosestOrListAll) {
  Checked c = Check("name: a\npartiton: gpu\nzzzzzzzzzzzz: 1\n");
  EXPECT_NE(c.errors.find("f.yaml:2:1: top.partiton: unknown key 'partiton'; did you mean "
                          "'partition'?"),
            std::string::npos)
      << c.errors;
  EXPECT_NE(c.errors.find("f.yaml:3:1: top.zzzzzzzzzzzz: unknown key 'zzzzzzzzzzzz'; valid keys: "
                          "name, partition, worker"),
            std::string::npos)
      << c.errors;
  EXPECT_EQ(c.entries.size(), 1u);
}

TEST(CheckedEntries, ARepeatedKeyNamesTheFirstLine) {
  Checked c = Check("name: a\nworker: {}\nname: b\n");
  EXPECT_NE(c.errors.find("f.yaml:3:1: top.name: duplicate key 'name' (first at line 1)"),
            std::string::npos)
      << c.errors;
  EXPECT_EQ(c.entries.at("name").value.Scalar(), "a");
}

TEST(CheckedEntries, ANonMapIsOneError) {
  EXPECT_NE(Check("[1, 2]\n").errors.find("f.yaml:1:1: top: expected a map, got a list"),
            std::string::npos);
}

// The cap came from the sweep reader; the pools file reads its maps with it too now.
TEST(CheckedEntries, MoreKeysThanAnyReaderKnowsIsRefusedBeforeTheWalk) {
  std::string yaml;
  for (size_t i = 0; i <= kMaxMapKeys; ++i) yaml += "k" + std::to_string(i) + ": 1\n";
  Checked c = Check(yaml);
  EXPECT_NE(c.errors.find("top: has 65 keys; valid keys: name, partition, worker"),
            std::string::npos)
      << c.errors;
  EXPECT_EQ(c.errors.find("unknown key"), std::string::npos) << "not walked: " << c.errors;
  EXPECT_TRUE(c.entries.empty());
}

TEST(CheckedEntries, JoinNames) {
  EXPECT_EQ(JoinNames(kKeys), "name, partition, worker");
  EXPECT_EQ(JoinNames({}), "");
}

}  // namespace
}  // namespace ablate
