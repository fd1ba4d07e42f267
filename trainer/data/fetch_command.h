// `ablate-data fetch` and `ablate-data verify`: flags in, exit code out.
#ifndef ABLATE_TRAINER_DATA_FETCH_COMMAND_H_
#define ABLATE_TRAINER_DATA_FETCH_COMMAND_H_

#include <cstdint>
#include <string>

namespace ablate {

inline constexpr int kFetchExitOk = 0;
inline constexpr int kFetchExitUsage = 2;     // unknown dataset, bad flag, no libcurl
inline constexpr int kFetchExitInvalid = 3;   // verify: the dataset does not match its manifest
inline constexpr int kFetchExitFailed = 4;    // fetch: a shard could not be fetched

struct FetchFlags {
  std::string dataset;   // "fineweb10B"
  int shards = 0;        // train shards
  std::string dest;      // the data directory; the dataset goes to dest/<dataset>
  std::string base_url;  // empty = the dataset's public location
  int retries = 5;
  int64_t backoff_ms = 1000;
  int64_t max_backoff_ms = 60000;
  int stall_timeout_s = 60;
  bool json = false;
};

// Fetches as flags say. Progress and errors go to stderr; with `json`, a summary object (or
// {"error", "shard"}) goes to stdout.
int RunFetch(const FetchFlags& flags);

// Checks DIR against its manifest.json (sizes and headers; with `checksums`, every SHA-256).
int RunVerify(const std::string& dir, bool checksums, bool json);

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_FETCH_COMMAND_H_
