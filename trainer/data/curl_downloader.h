// The Downloader over libcurl: HTTP(S) (redirects followed, as Hugging Face's /resolve/ URLs
// need) and file:// URLs, resumed with Range requests. The only file that includes curl.h.
// Built only when CMake finds libcurl (ABLATE_HAVE_CURL).
#ifndef ABLATE_TRAINER_DATA_CURL_DOWNLOADER_H_
#define ABLATE_TRAINER_DATA_CURL_DOWNLOADER_H_

#include <memory>
#include <string>

#include "trainer/config/result.h"
#include "trainer/data/downloader.h"

namespace ablate {

struct CurlOptions {
  int connect_timeout_s = 30;
  // A transfer slower than 1 byte/s for this long is cut and retried (a stalled connection).
  int stall_timeout_s = 60;
  std::string user_agent = "ablate-data";
};

class CurlDownloader final : public Downloader {
 public:
  // Initialises libcurl; the error names the libcurl failure.
  static Result<std::unique_ptr<CurlDownloader>> Create(const CurlOptions& options);
  ~CurlDownloader() override;

  // Outcomes: kComplete when the transfer ended with a 2xx (or file://) and the file's size is
  // the size the server announced; kRetryable for transport errors, cut transfers, 408, 429 and
  // 5xx, and a refused resume (416: the .part is removed so the next try starts over);
  // kPermanent for other HTTP statuses, bad URLs and local file errors.
  DownloadResult Download(const std::string& url, const std::string& part_path,
                          const DownloadProgressFn& progress) override;

 private:
  explicit CurlDownloader(const CurlOptions& options, void* handle);
  CurlOptions options_;
  void* curl_;  // CURL*, reused across downloads for connection reuse
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_CURL_DOWNLOADER_H_
