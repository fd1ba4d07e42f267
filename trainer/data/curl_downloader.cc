// libcurl transfers into ".part" files. curl's own errors are translated to words here and
// nowhere else.
#include "trainer/data/curl_downloader.h"

#include <curl/curl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace ablate {
namespace {

namespace fs = std::filesystem;
using Outcome = DownloadResult::Outcome;

// The state of one transfer, shared with curl's callbacks.
struct Transfer {
  std::string part_path;
  int64_t offset = 0;  // bytes of the file before this transfer's first byte
  std::FILE* file = nullptr;
  int status = 0;           // status line of the latest response (0: not HTTP)
  int64_t range_start = -1;  // from Content-Range
  int64_t range_total = -1;
  int64_t received = 0;  // body bytes written
  std::string write_error;
  bool range_mismatch = false;  // a 206 that did not start at our end
  std::string error_body;  // the start of a non-2xx response body
  const DownloadProgressFn* progress = nullptr;
};

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
  }
  return true;
}

// "Content-Range: bytes 100-199/1000" or "bytes */1000" (a refused range).
void ParseContentRange(std::string_view v, Transfer* t) {
  long long start = -1, end = -1, total = -1;
  std::string s(v);
  if (std::sscanf(s.c_str(), " bytes %lld-%lld/%lld", &start, &end, &total) == 3) {
    t->range_start = start;
    t->range_total = total;
  } else if (std::sscanf(s.c_str(), " bytes */%lld", &total) == 1) {
    t->range_total = total;
  }
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) {  // a new response (after a redirect, or 100 Continue)
    int status = 0;
    std::string s(line);
    if (std::sscanf(s.c_str(), "HTTP/%*s %d", &status) == 1) t->status = status;
    t->range_start = t->range_total = -1;
  } else if (StartsWithNoCase(line, "content-range:")) {
    ParseContentRange(line.substr(14), t);
  }
  return size * n;
}

bool IsSuccess(int status) { return status == 0 || (status >= 200 && status < 300); }

// Opens the part file at the first body byte, when the status says whether the range was
// honoured: 206 appends, 200 (a server that ignores ranges) starts the file over.
bool OpenPart(Transfer* t) {
  const char* mode = "ab";
  if (t->status == 206 && t->range_start != t->offset) {
    t->range_mismatch = true;
    t->write_error = "the server sent bytes from " + std::to_string(t->range_start) +
                     ", not from " + std::to_string(t->offset);
    return false;
  }
  if (t->status == 200 && t->offset > 0) {
    mode = "wb";
    t->offset = 0;
  }
  t->file = std::fopen(t->part_path.c_str(), mode);
  if (t->file == nullptr) t->write_error = "cannot open " + t->part_path + ": " + std::strerror(errno);
  return t->file != nullptr;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t bytes = size * n;
  if (!IsSuccess(t->status)) {
    if (t->error_body.size() < 200) t->error_body.append(data, std::min<size_t>(bytes, 200));
    return bytes;
  }
  if (t->file == nullptr && !OpenPart(t)) return 0;
  if (std::fwrite(data, 1, bytes, t->file) != bytes) {
    t->write_error = "cannot write " + t->part_path + ": " + std::strerror(errno);
    return 0;
  }
  t->received += static_cast<int64_t>(bytes);
  return bytes;
}

int OnProgress(void* user, curl_off_t total, curl_off_t now, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->progress != nullptr && *t->progress && IsSuccess(t->status)) {
    (*t->progress)(t->offset + now, total > 0 ? t->offset + total : -1);
  }
  return 0;
}

int64_t FileSize(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(size);
}

// The first line of an error body, short, for the message ("HTTP 404 (Entry not found)").
std::string BodyHint(const std::string& body) {
  std::string line = body.substr(0, body.find_first_of("\r\n"));
  if (line.size() > 120) line = line.substr(0, 120) + "...";
  bool printable = !line.empty() && std::all_of(line.begin(), line.end(), [](char c) {
    return c >= 32 && c < 127;
  });
  return printable ? " (" + line + ")" : "";
}

DownloadResult HttpFailure(const Transfer& t, const std::string& url) {
  DownloadResult r;
  r.received_bytes = t.received;
  r.error = "HTTP " + std::to_string(t.status) + BodyHint(t.error_body) + " from " + url;
  bool transient = t.status == 408 || t.status == 429 || t.status >= 500;
  r.outcome = transient ? Outcome::kRetryable : Outcome::kPermanent;
  return r;
}

DownloadResult CurlFailure(CURLcode rc, const char* detail, const Transfer& t,
                           const std::string& url) {
  DownloadResult r;
  r.received_bytes = t.received;
  std::string what = detail[0] != '\0' ? detail : curl_easy_strerror(rc);
  r.error = what + " (" + url + ", " + std::to_string(t.offset + t.received) + " bytes on disk)";
  switch (rc) {
    case CURLE_WRITE_ERROR:
      if (!t.write_error.empty()) r.error = t.write_error;
      r.outcome = t.range_mismatch ? Outcome::kRetryable : Outcome::kPermanent;
      break;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
    case CURLE_FILE_COULDNT_READ_FILE:
      r.outcome = Outcome::kPermanent;
      break;
    default:
      r.outcome = Outcome::kRetryable;  // cut, timed out, reset, refused, DNS
  }
  if (rc == CURLE_RANGE_ERROR || t.range_mismatch) {
    std::remove(t.part_path.c_str());  // the server cannot resume this file: start over
  }
  return r;
}

void SetTransferOptions(CURL* c, const CurlOptions& o, Transfer* t, const std::string& url,
                        const std::string& range, char* errbuf) {
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, o.user_agent.c_str());
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(o.connect_timeout_s));
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(o.stall_timeout_s));
  curl_easy_setopt(c, CURLOPT_RANGE, range.empty() ? nullptr : range.c_str());
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, t);
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
}

// After a transfer curl calls done: is the file whole?
DownloadResult Finish(CURL* c, const Transfer& t, const std::string& url) {
  DownloadResult r;
  r.received_bytes = t.received;
  if (t.status == 416) {  // nothing after our end: whole already, or a stale .part
    if (t.range_total == t.offset) {
      r.outcome = Outcome::kComplete;
      r.expected_bytes = t.offset;
      return r;
    }
    std::remove(t.part_path.c_str());
    r.outcome = Outcome::kRetryable;
    r.error = "the server refused to resume at byte " + std::to_string(t.offset) +
              " (HTTP 416); starting over";
    return r;
  }
  if (!IsSuccess(t.status)) return HttpFailure(t, url);
  curl_off_t length = -1;
  curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
  int64_t have = t.offset + t.received;
  r.expected_bytes = length >= 0 ? t.offset + length : -1;
  if (t.status == 206 && t.range_total >= 0) r.expected_bytes = t.range_total;
  if (r.expected_bytes >= 0 && have != r.expected_bytes) {
    r.outcome = Outcome::kRetryable;
    r.error = "the transfer ended after " + std::to_string(have) + " of " +
              std::to_string(r.expected_bytes) + " bytes (" + url + ")";
    return r;
  }
  r.outcome = Outcome::kComplete;
  return r;
}

}  // namespace

Result<std::unique_ptr<CurlDownloader>> CurlDownloader::Create(const CurlOptions& options) {
  if (CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
    return Error{std::string("libcurl: ") + curl_easy_strerror(rc), ""};
  }
  CURL* c = curl_easy_init();
  if (c == nullptr) return Error{"libcurl: curl_easy_init failed", ""};
  return std::unique_ptr<CurlDownloader>(new CurlDownloader(options, c));
}

CurlDownloader::CurlDownloader(const CurlOptions& options, void* handle)
    : options_(options), curl_(handle) {}

CurlDownloader::~CurlDownloader() {
  curl_easy_cleanup(static_cast<CURL*>(curl_));
  curl_global_cleanup();
}

DownloadResult CurlDownloader::Download(const std::string& url, const std::string& part_path,
                                        const DownloadProgressFn& progress) {
  CURL* c = static_cast<CURL*>(curl_);
  Transfer t;
  t.part_path = part_path;
  t.offset = FileSize(part_path);
  t.progress = &progress;
  std::string range = t.offset > 0 ? std::to_string(t.offset) + "-" : "";
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_reset(c);
  SetTransferOptions(c, options_, &t, url, range, errbuf);
  CURLcode rc = curl_easy_perform(c);
  bool closed = t.file == nullptr || std::fclose(t.file) == 0;
  if (!closed && rc == CURLE_OK) {
    return {Outcome::kPermanent, "cannot write " + part_path + ": " + std::strerror(errno), -1,
            t.received};
  }
  if (rc != CURLE_OK) return CurlFailure(rc, errbuf, t, url);
  return Finish(c, t, url);
}

}  // namespace ablate
