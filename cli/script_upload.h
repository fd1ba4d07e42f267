// Script runs at submit (issue 14): the CLI reads every `script:` a spec names (a file or a
// folder, relative to the spec file) and sends the files with the spec. The coordinator checks
// them (existence, the 16 MB limit) and reports problems at the spec's file:line:column; this
// side only reads.
#ifndef ABLATE_CLI_SCRIPT_UPLOAD_H_
#define ABLATE_CLI_SCRIPT_UPLOAD_H_

#include <string>
#include <vector>

#include "ablate/v1/client.pb.h"

namespace ablate {

// The distinct `script:` values of baseline and ablations, then decompose's from and to, in spec
// order. A spec that does not
// parse as YAML names none (the coordinator reports its syntax error).
std::vector<std::string> ScriptPaths(const std::string& spec_yaml);

// Adds one ScriptUpload per ScriptPaths entry, read relative to `spec_dir`: the files, or the
// reason they could not be read (missing, over 16 MB, ...).
void AddScriptUploads(const std::string& spec_yaml, const std::string& spec_dir,
                      v1::SubmitSweepRequest* req);

// The variant's script diff (Variant.diff_json "script".diff), "" when it has none.
std::string ScriptDiffText(const std::string& diff_json);

}  // namespace ablate

#endif  // ABLATE_CLI_SCRIPT_UPLOAD_H_
