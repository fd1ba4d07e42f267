// Every top-level key of a sweep spec, and what it means for each kind of sweep (built-in trainer
// or the researcher's own script). This table is the one place a sweep key is declared: the spec
// reader accepts exactly these names, ExpandSweep refuses for a script sweep the keys marked
// kRefused (at the key's file:line:column, with `why`), and tests/server/sweep/sweep_keys_test.cc
// walks the table and checks that every key is honoured by both kinds or refused, so a key added
// here without its meaning for scripts fails that test.
#ifndef ABLATE_SERVER_SWEEP_SWEEP_KEYS_H_
#define ABLATE_SERVER_SWEEP_SWEEP_KEYS_H_

#include <array>
#include <cstddef>
#include <string_view>

namespace ablate {

// What a script sweep does with a key.
enum class ScriptUse {
  kSame,     // the same meaning as for a built-in sweep (filled in one place: FillSweep)
  kOwn,      // a key of each kind's own shape (baseline, ablations): read per kind
  kRefused,  // an error for a script sweep, with `why`
};

struct SweepKey {
  std::string_view name;
  ScriptUse scripts;
  std::string_view why;  // kRefused: the reason; else what differs for scripts, if anything
};

inline constexpr SweepKey kSweepKeys[] = {
    {"name", ScriptUse::kSame, ""},
    {"description", ScriptUse::kSame, "for the reader; changes nothing but the spec text"},
    {"baseline", ScriptUse::kOwn, "preset/scale/set, or script/launch/command/args/env/..."},
    {"include_baseline", ScriptUse::kSame, ""},
    {"target_val_loss", ScriptUse::kSame, ""},
    {"seeds", ScriptUse::kSame, ""},
    {"gpus_per_run", ScriptUse::kSame,
     "a script gets CUDA_VISIBLE_DEVICES and {gpus}; torchrun starts one process per GPU (or "
     "per requested GPU on a CPU worker)"},
    {"priority", ScriptUse::kSame, ""},
    {"max_concurrent", ScriptUse::kSame, ""},
    {"max_attempts", ScriptUse::kSame, ""},
    {"dataset", ScriptUse::kSame,
     "default: none for a script sweep unless a variant sets data_link (then fineweb10B)"},
    {"tags", ScriptUse::kSame, ""},
    {"ablations", ScriptUse::kOwn, "{name, set}, or {name, script keys}"},
    {"decompose", ScriptUse::kOwn,
     "script sweeps only: {from, to, groups} expands the diff of two scripts into variants "
     "(common/decompose/decompose_spec.h); a spec with it is a script sweep"},
    {"grid", ScriptUse::kRefused,
     "grid varies knobs of the built-in trainer; with a script baseline, list the variants under "
     "ablations"},
    {"order_seed", ScriptUse::kSame, ""},
    {"pool", ScriptUse::kSame, "its pilots must run ablate-worker --allow-scripts"},
    {"checkpoint_every", ScriptUse::kRefused,
     "ablate checkpoints only its built-in trainer; a script keeps its own checkpoints (ablate "
     "cannot make it write or resume from one), so a requeued script run starts again from its "
     "first step; remove checkpoint_every (a script may resume from files it writes itself)"},
};

inline constexpr size_t kNumSweepKeys = std::size(kSweepKeys);

// Keys of one `ablations:` entry other than each kind's own (`set` for the built-in trainer, the
// script keys of server/sweep/script_spec.h), and which kinds honour them. ExpandSweep refuses
// a kScriptOnly key in a built-in sweep's ablation (at the key's file:line:column, with `why`);
// tests/server/sweep/sweep_keys_test.cc walks this table too.
enum class AblationKeyUse {
  kBoth,        // the same meaning for both kinds
  kScriptOnly,  // honoured by a script sweep; an error in a built-in sweep, with `why`
};

struct AblationKey {
  std::string_view name;
  AblationKeyUse use;
  std::string_view why;  // kScriptOnly: why a built-in sweep refuses it
};

inline constexpr AblationKey kAblationEntryKeys[] = {
    {"name", AblationKeyUse::kBoth, ""},
    // `same_work: true`: the researcher declares that this script ablation does the baseline's
    // work per step (same model, batch and sequence; e.g. only a learning rate or a schedule
    // differs), so the confound check (server/stats/confound.h) tests its ms/step against the
    // baseline's. ablate cannot see what a script computes, so without it every script ablation
    // counts as changing a step's work and is left out of that check.
    {"same_work", AblationKeyUse::kScriptOnly,
     "the built-in trainer's ablations do the baseline's work per step or not as their knobs say "
     "(trainer/config/step_work.h), so there is nothing to declare; same_work is for script "
     "ablations, whose step work ablate cannot see"},
};

// The entry for `name` in kAblationEntryKeys, or nullptr.
constexpr const AblationKey* FindAblationEntryKey(std::string_view name) {
  for (const AblationKey& k : kAblationEntryKeys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

// The names of kSweepKeys, in table order (for the reader's unknown-key check).
constexpr std::array<std::string_view, kNumSweepKeys> SweepKeyNames() {
  std::array<std::string_view, kNumSweepKeys> names{};
  for (size_t i = 0; i < kNumSweepKeys; ++i) names[i] = kSweepKeys[i].name;
  return names;
}

// The entry for `name`, or nullptr.
constexpr const SweepKey* FindSweepKey(std::string_view name) {
  for (const SweepKey& k : kSweepKeys) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_SWEEP_KEYS_H_
