// Datasets a worker can train on: subdirectories of --data-dir that hold a manifest.json
// (trainer/data/dataset_manifest.h, written by `ablate-data encode` and `ablate-data fetch`)
// and exactly the shards it lists. A worker advertises only datasets that pass this check, so
// the coordinator sends a run only to nodes that have its dataset complete and valid.
#ifndef ABLATE_WORKER_DATASETS_H_
#define ABLATE_WORKER_DATASETS_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ablate::worker {

struct DatasetCheck {
  std::string name;     // the subdirectory's name, which is the dataset's name
  std::string problem;  // empty when valid; else why not ("fineweb_train_000002.bin: missing")
};

// Checks every subdirectory of `data_dir` (hidden ones skipped), sorted by name. The check reads
// the manifest and each listed shard's size and 1 KiB header (not its checksum: that reads every
// byte; `ablate-data verify --checksums` does it). A missing data_dir yields an empty list.
std::vector<DatasetCheck> CheckDatasets(const std::string& data_dir);

// The names of the valid datasets under `data_dir`, sorted. `log`, when set, is called once per
// invalid dataset with a line saying why it is not advertised.
std::vector<std::string> ListDatasets(const std::string& data_dir,
                                      const std::function<void(std::string_view)>& log = {});

// Shard globs passed to ablate-train for a dataset: the manifest's train and val patterns under
// the dataset's directory ("train_*.bin" and "val_*.bin" when the manifest cannot be read).
std::string TrainGlob(const std::string& data_dir, const std::string& dataset);
std::string ValGlob(const std::string& data_dir, const std::string& dataset);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_DATASETS_H_
