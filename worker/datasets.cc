// Dataset discovery: each subdirectory is checked against its manifest before it is advertised.
#include "worker/datasets.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "trainer/data/dataset_manifest.h"

namespace ablate::worker {
namespace {

namespace fs = std::filesystem;

std::string Problem(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir / kManifestFile, ec)) {
    return "no manifest.json (make one with `ablate-data encode` or `ablate-data fetch`)";
  }
  Result<DatasetManifest> m = ReadManifest(dir.string());
  if (!m.ok()) return m.error().message;
  Status s = VerifyDataset(dir.string(), *m, VerifyDepth::kHeaders);
  return s.ok() ? "" : s.message();
}

std::string Glob(const std::string& data_dir, const std::string& dataset, bool train) {
  std::string dir = data_dir + "/" + dataset;
  Result<DatasetManifest> m = ReadManifest(dir);
  DatasetManifest fallback;
  const DatasetManifest& use = m.ok() ? *m : fallback;
  return dir + "/" + (train ? use.train_pattern : use.val_pattern);
}

}  // namespace

std::vector<DatasetCheck> CheckDatasets(const std::string& data_dir) {
  std::vector<DatasetCheck> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(data_dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.starts_with(".") || !e.is_directory(ec)) continue;
    out.push_back({name, Problem(e.path())});
  }
  std::sort(out.begin(), out.end(),
            [](const DatasetCheck& a, const DatasetCheck& b) { return a.name < b.name; });
  return out;
}

std::vector<std::string> ListDatasets(const std::string& data_dir,
                                      const std::function<void(std::string_view)>& log) {
  std::vector<std::string> names;
  for (const DatasetCheck& c : CheckDatasets(data_dir)) {
    // The coordinator takes only names of letters, digits and ._:/@+=-_, at most 200 bytes
    // (a Hello with another is refused), and at most 256 of them.
    const bool plain = c.name.size() <= 200 && std::all_of(c.name.begin(), c.name.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) ||
             std::string_view("._:/@+=-_").find(ch) != std::string_view::npos;
    });
    std::string problem = c.problem;
    if (problem.empty() && !plain) problem = "its name has characters other than letters, "
                                             "digits and ._:/@+=-_ (or is over 200 bytes)";
    if (problem.empty() && names.size() >= 256) problem = "only 256 datasets are advertised";
    if (problem.empty()) {
      names.push_back(c.name);
    } else if (log) {
      log("dataset " + c.name + " in " + data_dir + " is not advertised: " + problem);
    }
  }
  return names;
}

std::string TrainGlob(const std::string& data_dir, const std::string& dataset) {
  return Glob(data_dir, dataset, /*train=*/true);
}

std::string ValGlob(const std::string& data_dir, const std::string& dataset) {
  return Glob(data_dir, dataset, /*train=*/false);
}

}  // namespace ablate::worker
