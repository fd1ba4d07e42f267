// The scripts of a decomposition (issue 29): FROM and TO read from the request's uploads, the
// diff split into changes (script_changes.h), and one snapshot per variant, each checked: the
// changes apply to FROM and all of them together rebuild TO byte for byte. The coordinator's
// script expander turns them into variants (server/sweep/script_expander.h); the CLI builds the
// same ones to compile each before submitting (cli/decompose_command.h). In common/ because both
// use it. Pure: no file system, no processes.
#ifndef ABLATE_COMMON_DECOMPOSE_DECOMPOSE_SCRIPTS_H_
#define ABLATE_COMMON_DECOMPOSE_DECOMPOSE_SCRIPTS_H_

#include <optional>
#include <string>
#include <vector>

#include "common/code_snapshot.h"
#include "common/decompose/decompose_spec.h"
#include "common/decompose/script_changes.h"
#include "common/spec/spec_errors.h"

namespace ablate {

struct DecomposedScripts {
  std::string path;  // FROM's file name: every variant runs a file of this name
  std::string from_text, to_text;
  ChangeSplit split;
  Snapshot from;
  // One per DecomposeVariants entry, in its order: that variant's single file.
  std::vector<DecomposeVariant> variants;
  std::vector<Snapshot> snapshots;
};

// Reads FROM and TO from `uploads` (each must be one file, not a folder) and builds the
// variants. Problems go to `errors` at the `decompose` key's positions: a file missing from the
// uploads or unreadable, a folder, equal scripts, a bad or unused group, too many changes, a
// change that does not apply. nullopt then.
std::optional<DecomposedScripts> DecomposeScripts(const DecomposeSpec& spec,
                                                  const ScriptUploads& uploads,
                                                  SpecErrors* errors);

}  // namespace ablate

#endif  // ABLATE_COMMON_DECOMPOSE_DECOMPOSE_SCRIPTS_H_
