// A dataset on disk: a directory holding token shards and manifest.json, which lists every shard
// with its size, token count and SHA-256. `ablate-data encode` and `ablate-data fetch` write it;
// workers check a dataset against it before they advertise the dataset to the coordinator.
//
// manifest.json (format 1):
//   {"format": 1, "name": "fineweb10B", "tokenizer": "gpt2", "vocab_size": 50257,
//    "bos_token": 50256, "train_pattern": "fineweb_train_*.bin", "val_pattern": "fineweb_val_*.bin",
//    "tokens": {"train": N, "val": M},
//    "shards": [{"name": "fineweb_val_000000.bin", "split": "val", "tokens": T, "bytes": B,
//                "sha256": "<64 hex>"}, ...],
//    ...any further fields a writer adds (encode: inputs, documents, val_fraction)}
// Patterns are glob(3) patterns relative to the directory; the trainer reads the shards they
// match, so every file they match must be listed. Manifests written before format 1 (no
// "format", no patterns, no checksums) read with the patterns "train_*.bin" and "val_*.bin".
#ifndef ABLATE_TRAINER_DATA_DATASET_MANIFEST_H_
#define ABLATE_TRAINER_DATA_DATASET_MANIFEST_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

inline constexpr int kManifestFormat = 1;
inline constexpr const char* kManifestFile = "manifest.json";

struct ShardEntry {
  std::string name;   // file name inside the dataset directory (no '/')
  std::string split;  // "train" or "val"
  int64_t tokens = 0;
  int64_t bytes = 0;   // 1024 + 2 * tokens
  std::string sha256;  // lowercase hex; empty when the writer did not record one
};

struct DatasetManifest {
  std::string train_pattern = "train_*.bin";
  std::string val_pattern = "val_*.bin";
  std::vector<ShardEntry> shards;  // in manifest order
  nlohmann::json fields = nlohmann::json::object();  // every other top-level field, kept as is

  int64_t Tokens(const std::string& split) const;
};

// Checks and reads a manifest document. Errors name the field ("shards[3].bytes: ...") and
// cover: wrong types, a shard name with '/', a split other than train/val, bytes that do not
// equal 1024 + 2 * tokens, a shard name its split's pattern does not match, a repeated name,
// no train shard, no val shard, a malformed sha256.
Result<DatasetManifest> ParseManifest(const nlohmann::json& doc);

// The manifest as JSON: `fields`, then format, patterns, token totals and shards.
nlohmann::json ManifestJson(const DatasetManifest& manifest);

// Reads `dir`/manifest.json. Errors name the file.
Result<DatasetManifest> ReadManifest(const std::string& dir);

// Writes `dir`/manifest.json through a temporary file and rename(2), so that a reader sees the
// old manifest or the new one, never a part.
Status WriteManifest(const std::string& dir, const DatasetManifest& manifest);

enum class VerifyDepth {
  kHeaders,    // sizes and shard headers: cheap (reads 1 KiB per shard), for worker start-up
  kChecksums,  // also SHA-256 of every shard that has one: reads every byte
};

// Checks that `dir` holds exactly the dataset its manifest describes: every listed shard exists
// with the listed size and a valid header with the listed token count (and, at kChecksums, the
// listed SHA-256), and every file the patterns match is listed. The error names the shard and
// what is wrong ("fineweb_train_000002.bin: 1000 bytes, manifest.json says 200001024").
Status VerifyDataset(const std::string& dir, const DatasetManifest& manifest, VerifyDepth depth);

// SHA-256 of a whole file as lowercase hex, and the largest uint16 token after the shard header
// (-1 for a shard with no tokens), in one pass over a read-only mapping of the file.
struct ShardDigest {
  std::string sha256;
  int max_token = -1;
};
Result<ShardDigest> DigestShard(const std::string& path);

// The names of the files in `dir` that `pattern` (glob(3), relative to dir) matches, sorted.
std::vector<std::string> MatchingFiles(const std::string& dir, const std::string& pattern);

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_DATASET_MANIFEST_H_
