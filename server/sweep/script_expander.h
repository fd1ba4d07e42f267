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

#include "common/spec/spec_errors.h"
#include "server/sweep/script_spec.h"
#include "server/sweep/sweep_expander.h"

namespace ablate {

// The variants of a script sweep (KindOf(spec) == kScript), for ExpandSweep: fills
// out->variants and out->snapshots (every variant's files, by hash) and returns the baseline's
// target_val_loss. Problems (a script missing from `uploads` or over 16 MB, `set` beside a script
// baseline, `args` that a `command:` has no {args} for, a variant that changes nothing, ...) go
// to `errors`, and nullopt comes back. The sweep's settings and runs are ExpandSweep's.
std::optional<double> BuildScriptVariants(const ParsedSpec& spec, const ScriptUploads& uploads,
                                          SpecErrors* errors, ExpandedSweep* out);

}  // namespace ablate

#endif  // ABLATE_SERVER_SWEEP_SCRIPT_EXPANDER_H_
