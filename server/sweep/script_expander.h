// Expansion of a sweep whose baseline runs a script (issue 14): each variant's config is
//   {"script": {"path", "snapshot" (hex SHA-256), "launch", "command", "args", "env",
//               "log_format", "data_link"[, "record" on the baseline]},
//    "target_val_loss": t}
// (the worker adds "seed"). An ablation inherits every script key it does not set. Its
// diff_json holds the changed keys as {"from", "to"}, env variables as "env.NAME", and for a
// changed script {"from": "path@hash", "to": ..., "diff": "<unified diff of the files>"}.
#ifndef ABLATE_SERVER_SWEEP_SCRIPT_EXPANDER_H_
#define ABLATE_SERVER_SWEEP_SCRIPT_EXPANDER_H_

#include <optional>
#include <string_view>

#include "server/sweep/script_spec.h"
#include "server/sweep/spec_errors.h"
#include "server/sweep/sweep_expander.h"

namespace ablate {

// True when the baseline or any ablation sets a script key.
bool UsesScripts(const ParsedSpec& spec);

// As ExpandSweep, for a spec where UsesScripts holds. The snapshots of every variant come back in
// ExpandedSweep::snapshots. Problems (a script missing from `uploads` or over 16 MB, `set` or
// `grid` beside a script baseline, a variant that changes nothing, ...) go to `errors`.
std::optional<ExpandedSweep> ExpandScriptSweep(const ParsedSpec& spec, std::string_view spec_yaml,
                                               const ScriptUploads& uploads, SpecErrors* errors);

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_SCRIPT_EXPANDER_H_
