// Reading the scripts a spec names.
#include "cli/script_upload.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/code_snapshot.h"

namespace ablate {
namespace {

void AddPath(const YAML::Node& script, std::vector<std::string>* out) {
  if (!script || !script.IsScalar()) return;
  if (std::find(out->begin(), out->end(), script.Scalar()) == out->end()) {
    out->push_back(script.Scalar());
  }
}

void AddScript(const YAML::Node& entry, std::vector<std::string>* out) {
  if (entry.IsMap()) AddPath(entry["script"], out);
}

}  // namespace

std::vector<std::string> ScriptPaths(const std::string& spec_yaml) {
  std::vector<std::string> paths;
  try {
    YAML::Node root = YAML::Load(spec_yaml);
    if (!root.IsMap()) return paths;
    AddScript(root["baseline"], &paths);
    YAML::Node ablations = root["ablations"];
    if (ablations && ablations.IsSequence()) {
      for (size_t i = 0; i < ablations.size() && i < 10000; ++i) AddScript(ablations[i], &paths);
    }
    // decompose: {from, to} (common/decompose/decompose_spec.h): both files travel like scripts.
    YAML::Node decompose = root["decompose"];
    if (decompose && decompose.IsMap()) {
      for (const char* key : {"from", "to"}) AddPath(decompose[key], &paths);
    }
  } catch (const YAML::Exception&) {
    paths.clear();  // the coordinator reports the spec's YAML error with its position
  }
  return paths;
}

void AddScriptUploads(const std::string& spec_yaml, const std::string& spec_dir,
                      v1::SubmitSweepRequest* req) {
  for (const std::string& script : ScriptPaths(spec_yaml)) {
    v1::ScriptUpload* upload = req->add_scripts();
    upload->set_script(script);
    std::string trimmed = script;
    while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
    if (!CheckSnapshotPath(trimmed).ok()) continue;  // the coordinator rejects the path itself
    std::filesystem::path full = std::filesystem::path(spec_dir) / trimmed;
    absl::StatusOr<Snapshot> files = ReadSnapshot(full.string());
    if (!files.ok()) {
      upload->set_error(std::string(files.status().message()));
      continue;
    }
    for (SnapshotFile& f : *files) {
      v1::SnapshotFile* p = upload->add_files();
      p->set_path(std::move(f.path));
      p->set_content(std::move(f.content));
      p->set_executable(f.executable);
    }
  }
}

std::string ScriptDiffText(const std::string& diff_json) {
  nlohmann::json d = nlohmann::json::parse(diff_json, nullptr, false);
  if (!d.is_object()) return "";
  auto it = d.find("script");
  if (it == d.end() || !it->is_object() || !it->contains("diff") || !(*it)["diff"].is_string()) {
    return "";
  }
  return (*it)["diff"].get<std::string>();
}

}  // namespace ablate
