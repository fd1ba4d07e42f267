// Walks every sweep key of the schema (server/sweep/sweep_keys.h) and checks that a built-in sweep
// and a script sweep both honour it the same way, or that a script sweep refuses it with
// file:line:column and the reason (issue 23: the script expander had dropped five keys).
#include "server/sweep/sweep_keys.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "server/sweep/sweep_spec.h"

namespace ablate {
namespace {

// How each key is tried: a spec line per kind (the same line for both unless `script` differs),
// and the parts of the expansion (Fingerprint's names) that it must change. A key of the schema
// missing here fails SweepKeysTest.EveryKeyIsWalked.
struct KeyCase {
  std::string line;
  std::string script_line;  // "" = `line`
  std::set<std::string> changes;
};

const std::map<std::string, KeyCase>& Cases() {
  static const auto* cases = new std::map<std::string, KeyCase>{
      {"name", {"name: other", "", {"name"}}},
      {"description", {"description: what it tests", "", {}}},
      {"baseline",
       {"baseline: {preset: r20-sub3min, scale: tiny, set: {muon.lr: 0.04}}",
        "baseline: {script: t.py, args: [\"--lr\", \"0.5\"]}",
        {"variants"}}},
      {"include_baseline", {"include_baseline: false", "", {"variants", "runs"}}},
      {"target_val_loss", {"target_val_loss: 3.5", "", {"target_val_loss", "variants"}}},
      {"seeds", {"seeds: {min: 2, max: 4}", "", {"seeds", "seeds_min", "runs"}}},
      {"gpus_per_run", {"gpus_per_run: 8", "", {"gpus_per_run"}}},
      {"priority", {"priority: 5", "", {"priority"}}},
      {"max_concurrent", {"max_concurrent: 2", "", {"max_concurrent"}}},
      {"max_attempts", {"max_attempts: 7", "", {"max_attempts"}}},
      {"dataset", {"dataset: my-data", "", {"dataset"}}},
      {"tags", {"tags: [a, b]", "", {"tags"}}},
      {"ablations",
       {"ablations: [{name: a, set: {logit_softcap: 15}}, {name: c, set: {logit_softcap: 25}}]",
        "ablations: [{name: a, args: [\"--lr\", \"2\"]}, {name: c, args: [\"--lr\", \"4\"]}]",
        {"variants"}}},
      {"grid", {"grid: {muon.lr: [0.04, 0.06]}", "", {"variants", "runs"}}},
      {"order_seed", {"order_seed: 8", "", {"order_seed", "runs"}}},
      {"pool", {"pool: h100", "", {"pool"}}},
      {"checkpoint_every", {"checkpoint_every: 10m", "", {"checkpoint_every_ms"}}},
      // Generates the variants in place of `ablations` (so it cannot be added to the base specs
      // here) and makes any spec a script sweep: decompose_test.cc walks it.
      {"decompose", {"", "", {}}},
  };
  return *cases;
}

// The base specs, one line per key (the order of the file).
std::vector<std::pair<std::string, std::string>> BaseLines(SweepKind kind) {
  const bool script = kind == SweepKind::kScript;
  return {{"name", "name: keys"},
          {"baseline",
           script ? "baseline: {script: t.py}" : "baseline: {preset: r20-sub3min, scale: tiny}"},
          {"seeds", "seeds: 3"},
          {"order_seed", "order_seed: 1"},
          {"ablations", script ? "ablations: [{name: a, args: [\"--lr\", \"2\"]}, {name: b, "
                                 "env: {FLAG: \"1\"}}]"
                               : "ablations: [{name: a, set: {logit_softcap: 15}}, {name: b, "
                                 "set: {unet_skips: false}}]"}};
}

// The spec with `key` set to `line` (replacing the base's line for it, else appended); `*line_no`
// gets the line it is on (1-based).
std::string SpecWith(SweepKind kind, const std::string& key, const std::string& line,
                     int* line_no) {
  std::vector<std::pair<std::string, std::string>> lines = BaseLines(kind);
  bool replaced = false;
  for (auto& [k, l] : lines) {
    if (k == key) l = line, replaced = true;
  }
  if (!replaced && !key.empty()) lines.emplace_back(key, line);
  std::string text;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].first == key && line_no) *line_no = static_cast<int>(i) + 1;
    text += lines[i].second + "\n";
  }
  return text;
}

ScriptUploads Uploads() {
  return {{"t.py",
           ScriptUpload{"", {{"t.py", "print('step:1/1 val_loss:3 train_time:1ms')\n", false}}}}};
}

absl::StatusOr<ExpandedSweep> Expand(const std::string& spec) {
  return ParseSweepSpec(spec, "s.yaml", Uploads());
}

// Everything an expansion decides but the spec text itself, by part.
std::map<std::string, std::string> Fingerprint(const ExpandedSweep& e) {
  const Sweep& s = e.sweep;
  std::string tags, variants, runs;
  for (const std::string& t : s.tags) tags += t + ",";
  for (const Variant& v : e.variants) {
    variants += v.name + "=" + v.config_hash + (v.same_work ? " same_work" : "") + ";";
  }
  for (const Run& r : e.runs) {
    runs += std::to_string(r.variant_id) + "/" + std::to_string(r.seed) + "@" +
            std::to_string(r.dispatch_order) + ";";
  }
  return {{"name", s.name},
          {"baseline_preset", s.baseline_preset},
          {"scale", s.scale},
          {"dataset", s.dataset},
          {"target_val_loss", std::to_string(s.target_val_loss)},
          {"seeds", std::to_string(s.seeds)},
          {"seeds_min", std::to_string(s.seeds_min)},
          {"order_seed", std::to_string(s.order_seed)},
          {"gpus_per_run", std::to_string(s.gpus_per_run)},
          {"priority", std::to_string(s.priority)},
          {"max_concurrent", std::to_string(s.max_concurrent)},
          {"max_attempts", std::to_string(s.max_attempts)},
          {"tags", tags},
          {"pool", s.pool},
          {"checkpoint_every_ms", std::to_string(s.checkpoint_every_ms)},
          {"variants", variants},
          {"runs", runs}};
}

std::set<std::string> Changed(const ExpandedSweep& base, const ExpandedSweep& with) {
  std::map<std::string, std::string> a = Fingerprint(base), b = Fingerprint(with);
  std::set<std::string> changed;
  for (const auto& [part, value] : a) {
    if (b.at(part) != value) changed.insert(part);
  }
  return changed;
}

std::string Join(const std::set<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return "{" + out + "}";
}

TEST(SweepKeysTest, EveryKeyIsWalked) {
  std::set<std::string> schema;
  for (const SweepKey& k : kSweepKeys) {
    schema.insert(std::string(k.name));
    EXPECT_TRUE(Cases().count(std::string(k.name)))
        << "sweep key '" << k.name << "' has no case here: say what it changes for both kinds";
    if (k.scripts == ScriptUse::kRefused) {
      EXPECT_FALSE(k.why.empty()) << k.name << ": a refusal needs its reason";
    }
  }
  for (const auto& [name, c] : Cases()) EXPECT_TRUE(schema.count(name)) << name;
}

TEST(SweepKeysTest, BothKindsHonourEveryKeyOrTheScriptKindRefusesIt) {
  for (const SweepKey& key : kSweepKeys) {
    const std::string name(key.name);
    auto c = Cases().find(name);
    if (c == Cases().end()) continue;  // EveryKeyIsWalked fails
    if (c->second.line.empty()) continue;  // walked by its own tests (see Cases)
    SCOPED_TRACE("key " + name);
    for (SweepKind kind : {SweepKind::kBuiltIn, SweepKind::kScript}) {
      const bool script = kind == SweepKind::kScript;
      SCOPED_TRACE(script ? "script sweep" : "built-in sweep");
      absl::StatusOr<ExpandedSweep> base = Expand(SpecWith(kind, "", "", nullptr));
      ASSERT_TRUE(base.ok()) << base.status();
      int line = 0;
      const std::string& text =
          script && !c->second.script_line.empty() ? c->second.script_line : c->second.line;
      absl::StatusOr<ExpandedSweep> with = Expand(SpecWith(kind, name, text, &line));
      if (script && key.scripts == ScriptUse::kRefused) {
        ASSERT_FALSE(with.ok()) << "a script sweep accepted " << text;
        EXPECT_NE(with.status().message().find("s.yaml:" + std::to_string(line) + ":1: " + name +
                                               ": not for a script sweep: " + std::string(key.why)),
                  std::string_view::npos)
            << with.status();
        continue;
      }
      ASSERT_TRUE(with.ok()) << with.status();
      EXPECT_EQ(Join(Changed(*base, *with)), Join(c->second.changes));
    }
  }
}

// How each key of an ablation entry (kAblationEntryKeys) is tried: the first ablation of the base
// spec replaced by `built_in` or `script`, and the parts of the expansion it must change.
struct AblationKeyCase {
  std::string built_in, script;
  std::set<std::string> changes;
};

const std::map<std::string, AblationKeyCase>& AblationCases() {
  static const auto* cases = new std::map<std::string, AblationKeyCase>{
      {"name",
       {"{name: other, set: {logit_softcap: 15}}",
        "{name: other, args: [\"--lr\", \"2\"]}",
        {"variants"}}},
      {"same_work",
       {"{name: a, set: {logit_softcap: 15}, same_work: true}",
        "{name: a, args: [\"--lr\", \"2\"], same_work: true}",
        {"variants"}}},
  };
  return *cases;
}

std::string AblationsLine(SweepKind kind, const std::string& first) {
  return "ablations: [" + first + ", " +
         (kind == SweepKind::kScript ? "{name: b, env: {FLAG: \"1\"}}]"
                                     : "{name: b, set: {unet_skips: false}}]");
}

TEST(SweepKeysTest, EveryAblationKeyIsWalked) {
  std::set<std::string> schema;
  for (const AblationKey& k : kAblationEntryKeys) {
    schema.insert(std::string(k.name));
    EXPECT_TRUE(AblationCases().count(std::string(k.name)))
        << "ablation key '" << k.name << "' has no case here: say what it changes for both kinds";
    if (k.use == AblationKeyUse::kScriptOnly) {
      EXPECT_FALSE(k.why.empty()) << k.name << ": a refusal needs its reason";
    }
  }
  for (const auto& [name, c] : AblationCases()) EXPECT_TRUE(schema.count(name)) << name;
}

// Every ablation key is honoured by both kinds, or (kScriptOnly) by a script sweep and refused
// by a built-in one at the key's value, with the reason.
TEST(SweepKeysTest, BothKindsHonourEveryAblationKeyOrTheBuiltInKindRefusesIt) {
  for (const AblationKey& key : kAblationEntryKeys) {
    const std::string name(key.name);
    auto c = AblationCases().find(name);
    if (c == AblationCases().end()) continue;  // EveryAblationKeyIsWalked fails
    SCOPED_TRACE("ablation key " + name);
    for (SweepKind kind : {SweepKind::kBuiltIn, SweepKind::kScript}) {
      const bool script = kind == SweepKind::kScript;
      SCOPED_TRACE(script ? "script sweep" : "built-in sweep");
      absl::StatusOr<ExpandedSweep> base = Expand(SpecWith(kind, "", "", nullptr));
      ASSERT_TRUE(base.ok()) << base.status();
      int line = 0;
      const std::string text = AblationsLine(kind, script ? c->second.script : c->second.built_in);
      absl::StatusOr<ExpandedSweep> with = Expand(SpecWith(kind, "ablations", text, &line));
      if (!script && key.use == AblationKeyUse::kScriptOnly) {
        ASSERT_FALSE(with.ok()) << "a built-in sweep accepted " << text;
        const size_t column = text.find(name + ": ") + name.size() + 3;  // 1-based, the value
        EXPECT_NE(
            with.status().message().find("s.yaml:" + std::to_string(line) + ":" +
                                         std::to_string(column) + ": ablations[0]." + name +
                                         ": not for a built-in sweep: " + std::string(key.why)),
            std::string_view::npos)
            << with.status();
        continue;
      }
      ASSERT_TRUE(with.ok()) << with.status();
      EXPECT_EQ(Join(Changed(*base, *with)), Join(c->second.changes));
    }
  }
}

// same_work is a declaration, nothing else: the variant runs exactly as without it.
TEST(SweepKeysTest, SameWorkMarksTheScriptVariantAndChangesNothingItRuns) {
  const std::string plain = AblationsLine(SweepKind::kScript, "{name: a, args: [\"--lr\", \"2\"]}");
  absl::StatusOr<ExpandedSweep> without =
      Expand(SpecWith(SweepKind::kScript, "ablations", plain, nullptr));
  absl::StatusOr<ExpandedSweep> with = Expand(
      SpecWith(SweepKind::kScript, "ablations",
               AblationsLine(SweepKind::kScript, AblationCases().at("same_work").script), nullptr));
  absl::StatusOr<ExpandedSweep> declined = Expand(SpecWith(
      SweepKind::kScript, "ablations",
      AblationsLine(SweepKind::kScript, "{name: a, args: [\"--lr\", \"2\"], same_work: false}"),
      nullptr));
  ASSERT_TRUE(without.ok()) << without.status();
  ASSERT_TRUE(with.ok()) << with.status();
  ASSERT_TRUE(declined.ok()) << declined.status();
  ASSERT_EQ(with->variants.size(), 3u);
  std::vector<bool> marks;
  for (size_t i = 0; i < with->variants.size(); ++i) {
    marks.push_back(with->variants[i].same_work);
    EXPECT_EQ(with->variants[i].config_json, without->variants[i].config_json);
    EXPECT_EQ(with->variants[i].config_hash, without->variants[i].config_hash);
    EXPECT_FALSE(without->variants[i].same_work);
    EXPECT_FALSE(declined->variants[i].same_work);
  }
  EXPECT_EQ(marks, (std::vector<bool>{false, true, false})) << "baseline, a, b";
  absl::StatusOr<ExpandedSweep> bad =
      Expand(SpecWith(SweepKind::kScript, "ablations",
                      AblationsLine(SweepKind::kScript,
                                    "{name: a, args: [\"--lr\", \"2\"], same_work: yes please}"),
                      nullptr));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ablations[0].same_work: "), std::string_view::npos)
      << bad.status();
}

// The issue's case: a script sweep's runs start in blocks, shuffled by its order seed, exactly as
// a built-in sweep's with the same shape.
TEST(SweepKeysTest, ScriptSweepRunsAreBlockedAndShuffledByTheirOrderSeed) {
  auto ranks = [](const ExpandedSweep& e) {
    std::vector<int64_t> out;
    for (const ablate::Run& r : e.runs) out.push_back(r.dispatch_order);
    return out;
  };
  absl::StatusOr<ExpandedSweep> script =
      Expand(SpecWith(SweepKind::kScript, "order_seed", "order_seed: 7", nullptr));
  absl::StatusOr<ExpandedSweep> built_in =
      Expand(SpecWith(SweepKind::kBuiltIn, "order_seed", "order_seed: 7", nullptr));
  ASSERT_TRUE(script.ok()) << script.status();
  ASSERT_TRUE(built_in.ok()) << built_in.status();
  EXPECT_EQ(script->sweep.order_seed, 7);
  EXPECT_EQ(ranks(*script), ranks(*built_in));
  for (const ablate::Run& r : script->runs) {
    EXPECT_EQ(r.dispatch_order / 3, r.seed) << "block k holds seed k of every variant";
  }
}

TEST(SweepKeysTest, AScriptSweepWithoutDatasetNeedsNoneUnlessItLinksOne) {
  absl::StatusOr<ExpandedSweep> plain = Expand(SpecWith(SweepKind::kScript, "", "", nullptr));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->sweep.dataset, "");
  absl::StatusOr<ExpandedSweep> linked = Expand(SpecWith(
      SweepKind::kScript, "baseline", "baseline: {script: t.py, data_link: data/x}", nullptr));
  ASSERT_TRUE(linked.ok()) << linked.status();
  EXPECT_EQ(linked->sweep.dataset, "fineweb10B");
}

}  // namespace
}  // namespace ablate
