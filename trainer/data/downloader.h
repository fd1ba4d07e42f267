// The one thing the shard fetcher needs from a network: bring a local ".part" file up to the
// full content of a URL, resuming where it stopped. CurlDownloader (curl_downloader.h) is the
// real one; tests can hand the fetcher any other.
#ifndef ABLATE_TRAINER_DATA_DOWNLOADER_H_
#define ABLATE_TRAINER_DATA_DOWNLOADER_H_

#include <cstdint>
#include <functional>
#include <string>

namespace ablate {

// Called while bytes arrive: `done` bytes of the file are on disk (resumed bytes included) of
// `total` (-1 while unknown).
using DownloadProgressFn = std::function<void(int64_t done, int64_t total)>;

struct DownloadResult {
  enum class Outcome {
    kComplete,   // the server sent the whole file; part_path holds it
    kRetryable,  // a cut connection, a timeout, a 5xx: part_path keeps what arrived
    kPermanent,  // a 404, a 403, a bad URL, a local write error: retrying will not help
  };
  Outcome outcome = Outcome::kPermanent;
  std::string error;            // not kComplete: the cause, with the URL and HTTP status
  int64_t expected_bytes = -1;  // kComplete: the size the server announced (-1: none)
  int64_t received_bytes = 0;   // body bytes written by this call
};

class Downloader {
 public:
  virtual ~Downloader() = default;
  // Downloads `url` into `part_path`. When part_path exists, asks only for the bytes after its
  // end (an HTTP Range request) and appends them; when the server ignores the range, starts the
  // file over. Never touches any other path. Not required to be thread-safe.
  virtual DownloadResult Download(const std::string& url, const std::string& part_path,
                                  const DownloadProgressFn& progress) = 0;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_DOWNLOADER_H_
