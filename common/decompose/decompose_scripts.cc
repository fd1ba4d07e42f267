// FROM and TO from the uploads, split, and rebuilt once per variant.
#include "common/decompose/decompose_scripts.h"

#include <utility>

namespace ablate {
namespace {

// The one file of an uploaded script, or an error at `at`.
const SnapshotFile* OneFile(const std::string& name, SpecPosition at, const char* key,
                            const ScriptUploads& uploads, SpecErrors* errors) {
  const std::string path = KeyPath("decompose", key);
  auto it = uploads.find(name);
  if (it == uploads.end()) {
    errors->Add(at, path,
                "the file '" + name + "' did not come with the spec (the ablate CLI reads it "
                "next to the spec file and uploads it)");
    return nullptr;
  }
  if (!it->second.error.empty()) {
    errors->Add(at, path, "script '" + name + "': " + it->second.error);
    return nullptr;
  }
  if (it->second.files.size() != 1 || it->second.files[0].path.find('/') != std::string::npos) {
    errors->Add(at, path,
                "'" + name + "' is a folder; decompose splits the diff of two single-file "
                "scripts");
    return nullptr;
  }
  return &it->second.files[0];
}

}  // namespace

std::optional<DecomposedScripts> DecomposeScripts(const DecomposeSpec& spec,
                                                  const ScriptUploads& uploads,
                                                  SpecErrors* errors) {
  const SnapshotFile* from = OneFile(spec.from, spec.from_at, "from", uploads, errors);
  const SnapshotFile* to = OneFile(spec.to, spec.to_at, "to", uploads, errors);
  if (!from || !to) return std::nullopt;
  DecomposedScripts out;
  out.path = from->path;
  out.from = {*from};
  out.from_text = from->content;
  out.to_text = to->content;
  absl::StatusOr<ChangeSplit> split = SplitChanges(out.from_text, out.to_text, spec.groups);
  if (!split.ok()) {
    errors->Add(spec.at, "decompose", std::string(split.status().message()));
    return std::nullopt;
  }
  out.split = *std::move(split);
  out.variants = DecomposeVariants(out.split.changes);
  for (const DecomposeVariant& v : out.variants) {
    absl::StatusOr<std::string> text = ApplyChanges(out.from_text, out.split, v.changes);
    if (text.ok() && v.changes.size() == out.split.changes.size() && *text != out.to_text) {
      text = absl::InternalError("all changes applied to FROM do not give TO");
    }
    if (!text.ok()) {
      errors->Add(spec.at, "decompose",
                  "variant '" + v.name + "': " + std::string(text.status().message()));
      return std::nullopt;
    }
    out.snapshots.push_back({{out.path, *std::move(text), from->executable}});
  }
  return out;
}

}  // namespace ablate
