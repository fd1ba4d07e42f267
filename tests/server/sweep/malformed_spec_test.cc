// Malformed sweep specs: each file in specs/ (or text generated here, for the guard rails that
// need big or odd input) must be rejected with INVALID_ARGUMENT whose first line points at the
// precise file:line:column, names the key and says what is wrong.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

std::string ReadSpecFile(const std::string& name) {
  std::ifstream in(std::string(ABLATE_SWEEP_SPECS_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

// Parses `text` as `file` and checks the first error line: "file:position: ..." containing
// every phrase.
void ExpectRejected(const std::string& text, const std::string& file, const std::string& position,
                    const std::vector<std::string>& phrases) {
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(text, file);
  ASSERT_FALSE(r.ok()) << file << " was accepted";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << file;
  std::string first = FirstLine(std::string(r.status().message()));
  EXPECT_TRUE(first.starts_with(file + ":" + position + ": "))
      << file << ": expected position " << position << ", got: " << first;
  for (const std::string& p : phrases) {
    EXPECT_NE(first.find(p), std::string::npos) << file << ": '" << p << "' not in: " << first;
  }
}

struct MalformedCase {
  std::string file;
  std::string position;  // line:column of the first error
  std::vector<std::string> phrases;
};

class MalformedSpecTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedSpecTest, RejectedWithPreciseError) {
  const MalformedCase& c = GetParam();
  ExpectRejected(ReadSpecFile(c.file), c.file, c.position, c.phrases);
}

const MalformedCase kCases[] = {
    // YAML syntax.
    {"syntax_unclosed_bracket.yaml", "3:6", {"YAML syntax error", "flow not found", "unclosed"}},
    {"syntax_bad_indentation.yaml", "4:2", {"YAML syntax error", "indentation"}},
    {"syntax_tab_indentation.yaml", "3:1", {"tab character in indentation"}},
    {"syntax_list_in_map.yaml", "3:1", {"YAML syntax error"}},
    {"multiple_documents.yaml", "4:1", {"one YAML document", "another one starts here"}},
    {"syntax_leading_comma.yaml", "1:1", {"YAML syntax error", "unexpected ','"}},
    {"empty.yaml", "1:1", {"the spec is empty"}},
    {"top_level_list.yaml", "1:1", {"must be a map", "got a list"}},
    // Keys.
    {"unknown_top_level_key.yaml", "4:1", {"seedz: unknown key 'seedz'", "did you mean 'seeds'"}},
    {"unknown_baseline_key.yaml", "2:12", {"baseline.presett: unknown key", "'preset'"}},
    {"duplicate_top_level_key.yaml", "4:1", {"seeds: duplicate key 'seeds'", "line 3"}},
    {"missing_name.yaml", "1:1", {"name: missing required key 'name'"}},
    {"missing_baseline.yaml", "1:1", {"baseline: missing required key 'baseline'"}},
    {"missing_set.yaml", "5:5", {"ablations[0].set: missing required key 'set'"}},
    // Knobs.
    {"unknown_knob.yaml",
     "7:21",
     {"ablations[2].set.logit_softcapp: unknown knob", "did you mean 'logit_softcap'"}},
    {"unknown_nested_knob.yaml",
     "8:9",
     {"ablations[0].set.muon.lrr: unknown knob 'muon.lrr'", "did you mean 'muon.lr'"}},
    {"knob_out_of_range.yaml", "5:37", {"ablations[0].set.adam.eps", "out of range [0, 1]"}},
    {"knob_wrong_type.yaml", "5:42", {"ablations[0].set.unet_skips", "expected true or false"}},
    {"knob_bad_choice.yaml", "5:34", {"ablations[0].set.mlp_act", "expected one of {relu2, gelu}"}},
    {"knob_fractional_int.yaml", "5:35", {"ablations[0].set.n_layer", "expected an integer"}},
    {"knob_set_twice.yaml", "8:14", {"ablations[0].set.muon.lr", "set twice", "line 7"}},
    {"null_knob_value.yaml", "7:7", {"ablations[0].set.logit_softcap", "has no value"}},
    {"set_not_map.yaml", "5:20", {"ablations[0].set", "expected a map", "got a list"}},
    {"seed_in_ablation.yaml", "5:30", {"ablations[0].set.seed", "set per run"}},
    {"cross_rule_full.yaml",
     "5:41",
     {"ablations[0].set.model_dim", "model_dim (768) must equal n_head (5) * head_dim (128)"}},
    {"cross_rule.yaml", "5:30", {"ablations[0].set.n_head", "must equal n_head (5)"}},
    // Top-level fields.
    {"seeds_not_int.yaml", "3:8", {"seeds: expected an integer, got 'many'"}},
    {"seeds_zero.yaml", "3:8", {"seeds: value 0 is out of range [1, 1000]"}},
    {"seeds_million.yaml", "3:8", {"seeds: value 1000000 is out of range [1, 1000]"}},
    {"gpus_12.yaml", "4:15", {"gpus_per_run: 12 GPUs cannot be scheduled", "multiple of 8"}},
    {"priority_out_of_range.yaml", "4:11", {"priority: value 5000 is out of range"}},
    {"max_attempts_zero.yaml", "4:15", {"max_attempts: value 0 is out of range [1, 20]"}},
    {"target_wrong_type.yaml", "4:18", {"target_val_loss: expected a number, got 'low'"}},
    {"tags_not_list.yaml", "4:7", {"tags: expected a list of strings"}},
    {"name_with_spaces.yaml", "1:7", {"name: sweep name 'my sweep' is invalid", "no spaces"}},
    {"unknown_preset.yaml",
     "2:20",
     {"baseline.preset: unknown preset 'r21-sub2min'", "did you mean 'r20-sub3min'",
      "available: r8-untied, r9-shortcuts, r11-unet, r18-softcap15, r20-sub3min"}},
    {"unknown_scale.yaml", "2:40", {"baseline.scale: unknown scale 'huge'", "full, small or tiny"}},
    // Ablations.
    {"ablations_map.yaml", "4:12", {"ablations: expected a list", "got a map"}},
    {"ablation_not_map.yaml", "5:5", {"ablations[0]: expected a map {name, set}"}},
    {"ablation_name_with_spaces.yaml",
     "5:12",
     {"ablations[0].name: ablation name 'no unet' is invalid"}},
    {"duplicate_ablation_name.yaml",
     "6:12",
     {"ablations[1].name: duplicate ablation name 'a'", "line 5"}},
    {"reserved_baseline_name.yaml", "5:12", {"ablations[0].name", "'baseline' is reserved"}},
    {"identical_ablation.yaml", "6:5", {"ablations[1]: ablation 'b' is identical to 'a'"}},
    {"noop_ablation.yaml",
     "6:5",
     {"ablation 'unet-on' changes nothing", "baseline already has unet_skips = true"}},
    {"nothing_to_run.yaml", "4:19", {"include_baseline: nothing to run"}},
    // Grid.
    {"grid_value_not_list.yaml", "5:12", {"grid.muon.lr: expected a list of values"}},
    {"grid_empty_list.yaml", "5:12", {"grid.muon.lr: the list of values is empty"}},
    {"grid_unknown_knob.yaml", "5:3", {"grid.muon.lrr: unknown knob", "did you mean 'muon.lr'"}},
    {"grid_not_map.yaml", "4:7", {"grid: expected a map"}},
    {"huge_grid.yaml",
     "5:3",
     {"grid: the sweep expands to 200200 runs", "1001 variants x 200 seeds", "limit is 100000"}},
};

INSTANTIATE_TEST_SUITE_P(Specs, MalformedSpecTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<MalformedCase>& info) {
                           std::string name = info.param.file.substr(0, info.param.file.find('.'));
                           return name;
                         });

const char kValidHead[] = "name: t\nbaseline: {preset: r20-sub3min, scale: tiny}\nseeds: 2\n";

TEST(GuardRails, RejectsFiveMegabytesBeforeParsing) {
  std::string text =
      kValidHead + std::string("description: \"") + std::string(5 << 20, 'x') + "\"\n";
  ExpectRejected(text, "big.yaml", "1:1", {"5242", "the limit is 1048576 bytes (1 MiB)"});
}

TEST(GuardRails, RejectsInvalidUtf8WithPosition) {
  std::string text = std::string(kValidHead) + "tags: [caf\xC3\xA9, ab\xFF" + "c]\n";
  ExpectRejected(text, "bytes.yaml", "4:16", {"not valid UTF-8", "0xFF"});
  ExpectRejected(std::string(kValidHead) + "tags: [\xC0\xAF]\n", "overlong.yaml", "4:8",
                 {"not valid UTF-8"});
  ExpectRejected(std::string(kValidHead) + "tags: [\xED\xA0\x80]\n", "surrogate.yaml", "4:8",
                 {"not valid UTF-8"});
  ExpectRejected(std::string(kValidHead) + "tags: [\xE2\x82", "truncated.yaml", "4:8",
                 {"not valid UTF-8"});
}

// Issue 24 (11): tags reach terminals through `ablate sweeps`; control characters (ESC, BEL,
// NUL, bidirectional overrides) are refused at their position, and the list is bounded.
TEST(GuardRails, TagsArePrintableAndBounded) {
  ExpectRejected(std::string(kValidHead) + "tags: [ok, \"red\\e[31m\"]\n", "esc.yaml", "4:12",
                 {"tags[1]", "control character U+001B at character 4"});
  ExpectRejected(std::string(kValidHead) + "tags: [\"ding\\a\"]\n", "bel.yaml", "4:8",
                 {"tags[0]", "U+0007"});
  ExpectRejected(std::string(kValidHead) + "tags: [\"a\\0b\"]\n", "nul.yaml", "4:8",
                 {"tags[0]", "U+0000"});
  ExpectRejected(std::string(kValidHead) + "tags: [\"abc\xE2\x80\xAEgpj.exe\"]\n", "rtl.yaml",
                 "4:8", {"tags[0]", "U+202E"});
  std::string many = "tags: [";
  for (int i = 0; i < 33; ++i) many += (i ? ", t" : "t") + std::to_string(i);
  ExpectRejected(std::string(kValidHead) + many + "]\n", "many.yaml", "4:7",
                 {"tags", "at most 32 tags, got 33"});
  absl::StatusOr<ExpandedSweep> ok =
      ParseSweepSpec(std::string(kValidHead) + "tags: [caf\xC3\xA9, \"two words\"]\n", "ok.yaml");
  ASSERT_TRUE(ok.ok()) << ok.status();
}

TEST(GuardRails, RejectsDeepFlowNestingWithoutRecursing) {
  ExpectRejected(std::string(100000, '['), "brackets.yaml", "1:32", {"nesting deeper than 32"});
  ExpectRejected(std::string(kValidHead) + "tags: " + std::string(100000, '{'), "braces.yaml",
                 "4:38", {"nesting deeper than 32"});
  std::string mixed = "a: ";
  for (int i = 0; i < 50000; ++i) mixed += "[{k: ";
  ExpectRejected(mixed, "mixed.yaml", "1:80", {"nesting deeper than 32"});
}

TEST(GuardRails, RejectsDeepBlockNesting) {
  std::string maps;
  for (int i = 0; i < 40; ++i) maps += std::string(2 * i, ' ') + "k:\n";
  ExpectRejected(maps, "maps.yaml", "33:65", {"nesting deeper than 32"});
  std::string dashes = "tags:\n  ";
  for (int i = 0; i < 1000; ++i) dashes += "- ";
  ExpectRejected(dashes + "x\n", "dashes.yaml", "2:63", {"nesting deeper than 32"});
}

TEST(GuardRails, BracketsInStringsCommentsAndBlockScalarsAreNotNesting) {
  std::string deep(40, '[');
  std::string text = std::string(kValidHead) + "description: \"" + deep + "\"  # " + deep +
                     "\ntags:\n  - '" + deep + "'\n  - plain" + deep + "\n" +
                     "grid: {muon.lr: [0.04]}\n";
  EXPECT_TRUE(ParseSweepSpec(text, "strings.yaml").ok())
      << ParseSweepSpec(text, "strings.yaml").status();
  std::string block = std::string(kValidHead) + "description: |\n  " + deep + "\n  {{{{\n" +
                      "grid: {muon.lr: [0.04]}\n";
  EXPECT_TRUE(ParseSweepSpec(block, "block.yaml").ok())
      << ParseSweepSpec(block, "block.yaml").status();
}

TEST(GuardRails, ModerateNestingReachesTheTypeCheck) {
  std::string text = std::string(kValidHead) + "tags: [[[[[[[[x]]]]]]]]\n";
  ExpectRejected(text, "nested.yaml", "4:8", {"tags[0]: expected a string, got a list"});
}

TEST(GuardRails, AliasedStructuresAreBounded) {
  // Each level names the previous one ten times; walking it naively would visit 10^6 lists.
  std::string text = std::string(kValidHead) + "x0: &a0 [1, 2]\n";
  for (int i = 1; i <= 6; ++i) {
    std::string level = std::to_string(i);
    std::string previous = std::to_string(i - 1);
    text += "x";
    text += level;
    text += ": &a";
    text += level;
    text += " [";
    for (int k = 0; k < 10; ++k) {
      text += k ? ", *a" : "*a";
      text += previous;
    }
    text += "]\n";
  }
  text += "ablations:\n  - {name: a, set: {skip_attn_layers: *a6}}\n";
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(text, "alias.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown key 'x0'"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("ablations[0].set.skip_attn_layers"), std::string::npos)
      << r.status();
}

TEST(Errors, EveryProblemIsReportedInDocumentOrder) {
  std::string text =
      "name: t\n"
      "baseline: {preset: r20-sub3min, scale: tiny}\n"
      "seeds: many\n"
      "colour: blue\n"
      "ablations:\n"
      "  - {name: a, set: {logit_softcapp: 15}}\n"
      "  - {name: b, set: {adam.eps: -1}}\n";
  absl::StatusOr<ExpandedSweep> r = ParseSweepSpec(text, "many.yaml");
  ASSERT_FALSE(r.ok());
  std::vector<std::string> lines;
  std::stringstream in{std::string(r.status().message())};
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << r.status();
  EXPECT_TRUE(lines[0].starts_with("many.yaml:3:8: seeds: expected an integer")) << lines[0];
  EXPECT_TRUE(lines[1].starts_with("many.yaml:4:1: colour: unknown key")) << lines[1];
  EXPECT_TRUE(lines[2].starts_with("many.yaml:6:21: ablations[0].set.logit_softcapp")) << lines[2];
  EXPECT_TRUE(lines[3].starts_with("many.yaml:7:31: ablations[1].set.adam.eps")) << lines[3];
}

TEST(Errors, ColumnsCountCharactersNotBytes) {
  ExpectRejected("{name: t, description: \"\xC3\xA9\xC3\xA9\", seedz: 1, baseline: {}}\n",
                 "utf8.yaml", "1:30", {"seedz: unknown key"});
}

}  // namespace
}  // namespace ablate
