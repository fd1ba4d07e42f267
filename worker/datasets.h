// Datasets a worker can train on: subdirectories of --data-dir in the layout `ablate-data encode`
// writes (manifest.json, train_*.bin, val_*.bin).
#ifndef ABLATE_WORKER_DATASETS_H_
#define ABLATE_WORKER_DATASETS_H_

#include <string>
#include <vector>

namespace ablate::worker {

// Names of the valid datasets under `data_dir`, sorted: each holds manifest.json and at least one
// train_*.bin and one val_*.bin. A missing data_dir yields an empty list.
std::vector<std::string> ListDatasets(const std::string& data_dir);

// Shard globs passed to ablate-train for a dataset.
std::string TrainGlob(const std::string& data_dir, const std::string& dataset);
std::string ValGlob(const std::string& data_dir, const std::string& dataset);

}  // namespace ablate::worker

#endif  // ABLATE_WORKER_DATASETS_H_
