// CurlDownloader for builds without libcurl (a GPU box with only a compiler): `fetch` then says
// so instead of failing to build.
#include "trainer/data/curl_downloader.h"

namespace ablate {

Result<std::unique_ptr<CurlDownloader>> CurlDownloader::Create(const CurlOptions&) {
  return Error{"ablate-data was built without libcurl, so it cannot fetch; install "
               "libcurl4-openssl-dev and rebuild, or fetch on another machine and copy the "
               "dataset directory",
               ""};
}

CurlDownloader::CurlDownloader(const CurlOptions& options, void* handle)
    : options_(options), curl_(handle) {}

CurlDownloader::~CurlDownloader() = default;

DownloadResult CurlDownloader::Download(const std::string&, const std::string&,
                                        const DownloadProgressFn&) {
  return {DownloadResult::Outcome::kPermanent, "built without libcurl", -1, 0};
}

}  // namespace ablate
