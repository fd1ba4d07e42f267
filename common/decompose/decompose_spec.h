// The spec key `decompose:` (issue 29): a script sweep expanded from the diff between two
// versions of a training script (script_changes.h says how the diff is split):
//
//   decompose:
//     from: r19.py          # the baseline's script (the baseline map may still set launch,
//     to: r20.py            # args, env, ...; not `script`)
//     groups:               # optional: hunks that are one change, by TO line ranges
//       merged-qkv: "120-140,301-309"
//
// The variants (server/sweep/script_expander.h) are FROM (the baseline), TO, each change added
// alone to FROM and each removed alone from TO; a spec with `decompose` lists no `ablations` and
// no `grid`. Both files come with the request as `script:` files do (ScriptUploads,
// common/code_snapshot.h, keyed by the value).
#ifndef ABLATE_COMMON_DECOMPOSE_DECOMPOSE_SPEC_H_
#define ABLATE_COMMON_DECOMPOSE_DECOMPOSE_SPEC_H_

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "common/decompose/script_changes.h"
#include "common/spec/spec_errors.h"

namespace ablate {

struct DecomposeSpec {
  std::string from, to;
  std::vector<ChangeGroup> groups;
  SpecPosition at, from_at, to_at;
};

// Reads the `decompose` map; problems (unknown keys, a missing from/to, a bad group) go to
// `errors` at their file:line:column and nullopt comes back.
std::optional<DecomposeSpec> ReadDecomposeSpec(const YAML::Node& node, SpecErrors* errors);

}  // namespace ablate

#endif  // ABLATE_COMMON_DECOMPOSE_DECOMPOSE_SPEC_H_
