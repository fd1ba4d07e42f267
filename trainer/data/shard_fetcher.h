// `ablate-data fetch`: brings a published, pre-tokenized dataset (the FineWeb-10B GPT-2 shards of
// modded-nanogpt) into a dataset directory: the val shard and the first N train shards, each
// downloaded to "<name>.part" (resumed where an earlier try stopped), retried with exponential
// backoff, validated (header, size against the header's token count and the server's
// Content-Length, every token below the vocabulary size), then renamed to its final name. A file
// with a final name is therefore always a valid shard. manifest.json (dataset_manifest.h) is
// written once every requested shard is in place.
//
// Knows nothing of HTTP: bytes come through a Downloader (downloader.h).
#ifndef ABLATE_TRAINER_DATA_SHARD_FETCHER_H_
#define ABLATE_TRAINER_DATA_SHARD_FETCHER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/config/result.h"
#include "trainer/data/dataset_manifest.h"
#include "trainer/data/downloader.h"

namespace ablate {

// A dataset published as shards under one base URL.
struct RemoteDataset {
  std::string name;              // "fineweb10B": also the directory name under --dest
  std::string default_base_url;  // shard URLs are base_url + "/" + file name
  std::string train_prefix;      // train shard i is train_prefix + six digits + ".bin"
  std::string val_prefix;        // the val shard is val_prefix + "000000.bin"
  int first_train_index = 1;     // number of the first train shard
  int train_shards = 0;          // how many train shards are published
  std::string tokenizer;         // manifest fields
  int64_t vocab_size = 0;        // every token must be below this
  int bos_token = 0;

  std::string ValShard() const;
  // REQUIRES: 0 <= i < train_shards. The i-th train shard's file name.
  std::string TrainShard(int i) const;
};

// The datasets `fetch` knows; nullptr for an unknown name.
const RemoteDataset* FindRemoteDataset(std::string_view name);
std::vector<std::string> RemoteDatasetNames();

struct FetchOptions {
  std::string dir;       // the dataset directory; created if missing
  std::string base_url;  // empty = the dataset's default_base_url
  int train_shards = 0;  // the first N train shards, 1..RemoteDataset::train_shards
  int retries = 5;       // further tries per shard after the first (retryable failures only)
  std::chrono::milliseconds backoff{1000};       // wait before the first retry; doubles
  std::chrono::milliseconds max_backoff{60000};  // ... up to this
};

struct FetchedShard {
  ShardEntry entry;
  bool downloaded = false;     // false: a valid file was already in place
  int attempts = 0;            // downloads tried (0 when already in place)
  int64_t received_bytes = 0;  // body bytes received over all attempts
  double seconds = 0;
};

struct FetchReport {
  std::string dir;
  std::vector<FetchedShard> shards;  // the requested shards, val first
  DatasetManifest manifest;          // as written (it also lists shards fetched earlier)
  int64_t received_bytes = 0;
};

// What the fetch tells its caller while it works. Every member may be empty.
struct FetchHooks {
  std::function<void(std::chrono::milliseconds)> sleep;  // empty: std::this_thread::sleep_for
  std::function<void(const std::string& line)> log;      // retries, replaced files
  std::function<void(int index, int count, const std::string& shard)> begin_shard;
  DownloadProgressFn progress;
  std::function<void(const FetchedShard&)> end_shard;
  std::function<double()> now_s;  // seconds, for FetchedShard::seconds; empty: steady clock
};

// Fetches `dataset` as `options` say through `downloader`. Errors name the shard and the cause
// ("shard fineweb_train_000002.bin: HTTP 404 from https://.../fineweb_train_000002.bin";
// "shard ...: byte 0: wrong magic 7 (expected 20240520) (gave up after 3 attempts)") and leave
// manifest.json as it was; shards already renamed into place stay (they are valid), and a
// ".part" file may stay for a later run to resume.
Result<FetchReport> FetchDataset(const RemoteDataset& dataset, const FetchOptions& options,
                                 Downloader& downloader, const FetchHooks& hooks);

// The wait before retry `retry` (1-based): backoff · 2^(retry-1), at most max_backoff.
std::chrono::milliseconds RetryDelay(const FetchOptions& options, int retry);

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_SHARD_FETCHER_H_
