// Dataset discovery with std::filesystem.
#include "worker/datasets.h"

#include <algorithm>
#include <filesystem>

namespace ablate::worker {
namespace {

namespace fs = std::filesystem;

bool HasShard(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.starts_with(prefix) && name.ends_with(".bin") && e.is_regular_file(ec)) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> ListDatasets(const std::string& data_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(data_dir, ec)) {
    if (!e.is_directory(ec)) continue;
    if (!fs::is_regular_file(e.path() / "manifest.json", ec)) continue;
    if (HasShard(e.path(), "train_") && HasShard(e.path(), "val_")) {
      names.push_back(e.path().filename().string());
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string TrainGlob(const std::string& data_dir, const std::string& dataset) {
  return data_dir + "/" + dataset + "/train_*.bin";
}

std::string ValGlob(const std::string& data_dir, const std::string& dataset) {
  return data_dir + "/" + dataset + "/val_*.bin";
}

}  // namespace ablate::worker
