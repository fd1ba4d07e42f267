// Sweep specs (DESIGN §3): the YAML a researcher writes, validated against the knob schema and
// expanded into a sweep, its variants and its runs. Parsing has no side effects: a rejected
// spec leaves nothing behind, and the caller stores an accepted one.
//
// Spec format (every key but name and baseline is optional):
//   name: seed-ablations                # [A-Za-z0-9._-], 1..100 characters
//   description: "..."
//   baseline: {preset: r20-sub3min, scale: full, set: {knob: value}}
//   include_baseline: true              # the baseline gets its own seeds
//   target_val_loss: 3.28               # default: the baseline config's target_val_loss
//   seeds: 8                            # per variant, 1..1000 (default 1), or
//   seeds: {min: 3, max: 16}            #   sequential: more seeds only while a verdict is open
//   order_seed: 7                       # shuffles the run order; default: a hash of the spec
//   gpus_per_run: 8                     # 0 = one CPU slot, 1..8, or k*8 up to 512 (default 1)
//   priority: 0                         # -1000..1000
//   max_concurrent: 0                   # 0 = unlimited
//   max_attempts: 3                     # 1..20
//   dataset: fineweb10B                 # default: the preset's; "debian-text" at scale tiny;
//                                       # none for a script sweep (fineweb10B with data_link)
//   tags: [a, b]                        # at most 32, 1..100 printable characters each
//   pool: h100                          # run only on that pool's workers (ablate-coordinator --pools)
//   checkpoint_every: 10m               # built-in trainer runs checkpoint this often (>= 1s, a
//                                       # unit required) into ablate-worker --checkpoint-dir;
//                                       # a requeued run resumes from the newest checkpoint
//                                       # (refused for a script sweep: scripts keep their own)
// Every top-level key and what it means for a script sweep: sweep_keys.h.
//   ablations: [{name: softcap-30, set: {logit_softcap: 30}}]
//   ablations: [{name: lr-2x, args: [--lr, "0.02"], same_work: true}]   # a script sweep's; the
//                                       # script keys are in script_spec.h. same_work: true
//                                       # declares that the ablation does the baseline's work
//                                       # per step (the confound check then tests its ms/step;
//                                       # default false; refused in a built-in sweep, whose
//                                       # knobs say it: sweep_keys.h kAblationEntryKeys)
//   grid: {muon.lr: [0.04, 0.05], logit_softcap: [15, 30]}   # variants "muon.lr=0.04,..."
// `set` keys are knob names (trainer/config/knob_schema.h), dotted or nested.
#ifndef ABLATE_SERVER_SWEEP_SWEEP_SPEC_H_
#define ABLATE_SERVER_SWEEP_SWEEP_SPEC_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "common/spec/spec_prescan.h"    // kMaxSpecBytes, kMaxSpecDepth
#include "server/sweep/script_spec.h"
#include "server/sweep/sweep_expander.h"  // ExpandedSweep, FormatVariantName, RunConfig

namespace ablate {

// Parses, validates and expands one spec. `file_name` prefixes error positions.
//
// Returns INVALID_ARGUMENT for any bad spec. Its message has one line per problem, in document
// order, each "file:line:column: key.path: problem" (1-based; e.g.
// "sweep.yaml:7:24: ablations[2].set.logit_softcapp: unknown knob 'logit_softcapp'; did you
// mean 'logit_softcap'?"). Every problem found is reported (up to SpecErrors::kMaxRendered).
// Guard rails: at most kMaxSpecBytes, valid UTF-8, nesting at most kMaxSpecDepth (checked
// before YAML parsing, so parsing never recurses deeply), at most kMaxSweepRuns runs.
//
// Thread-safe (no shared state). The result's Sweep holds `yaml_text` verbatim; every id is 0.
absl::StatusOr<ExpandedSweep> ParseSweepSpec(std::string_view yaml_text,
                                             std::string_view file_name);
// The same for a spec that may name scripts (script_spec.h): their files come in `uploads`, and
// their snapshots in the result's `snapshots`.
absl::StatusOr<ExpandedSweep> ParseSweepSpec(std::string_view yaml_text,
                                             std::string_view file_name,
                                             const ScriptUploads& uploads);

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_SWEEP_SPEC_H_
