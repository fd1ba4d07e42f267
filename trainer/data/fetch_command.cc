// The fetch and verify subcommands of ablate-data: wiring of flags, the curl downloader, the
// progress display and the JSON summary.
#include "trainer/data/fetch_command.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "trainer/data/curl_downloader.h"
#include "trainer/data/dataset_manifest.h"
#include "trainer/data/fetch_progress.h"
#include "trainer/data/shard_fetcher.h"

namespace ablate {
namespace {

using J = nlohmann::json;

double NowSeconds() {
  using Seconds = std::chrono::duration<double>;
  return Seconds(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int Fail(const std::string& message, const std::string& shard, bool json, int code) {
  std::cerr << "ablate-data: " << message << "\n";
  if (json) std::cout << J{{"error", message}, {"shard", shard}}.dump() << "\n";
  return code;
}

J ShardJson(const FetchedShard& f) {
  return {{"name", f.entry.name},          {"split", f.entry.split},
          {"tokens", f.entry.tokens},      {"bytes", f.entry.bytes},
          {"sha256", f.entry.sha256},      {"downloaded", f.downloaded},
          {"attempts", f.attempts},        {"received_bytes", f.received_bytes},
          {"seconds", f.seconds}};
}

J SummaryJson(const FetchReport& r, const std::string& dataset, double seconds) {
  J shards = J::array();
  for (const FetchedShard& f : r.shards) shards.push_back(ShardJson(f));
  return {{"dataset", dataset},
          {"dir", r.dir},
          {"source", r.manifest.fields.value("source", "")},
          {"shards", shards},
          {"manifest_shards", r.manifest.shards.size()},
          {"tokens", {{"train", r.manifest.Tokens("train")}, {"val", r.manifest.Tokens("val")}}},
          {"received_bytes", r.received_bytes},
          {"seconds", seconds}};
}

FetchHooks HooksFor(FetchProgress& progress) {
  FetchHooks h;
  h.log = [&progress](const std::string& line) { progress.Note(line); };
  h.begin_shard = [&progress](int i, int n, const std::string& name) {
    progress.BeginShard(i, n, name);
  };
  h.progress = [&progress](int64_t done, int64_t total) { progress.Update(done, total); };
  h.end_shard = [&progress](const FetchedShard& f) { progress.EndShard(f); };
  h.now_s = NowSeconds;
  return h;
}

}  // namespace

int RunFetch(const FetchFlags& f) {
  const RemoteDataset* dataset = FindRemoteDataset(f.dataset);
  if (dataset == nullptr) {
    std::string known;
    for (const std::string& n : RemoteDatasetNames()) known += (known.empty() ? "" : ", ") + n;
    return Fail("unknown dataset '" + f.dataset + "'; fetch knows: " + known, "", f.json,
                kFetchExitUsage);
  }
  CurlOptions curl_options;
  curl_options.stall_timeout_s = f.stall_timeout_s;
  Result<std::unique_ptr<CurlDownloader>> curl = CurlDownloader::Create(curl_options);
  if (!curl.ok()) return Fail(curl.error().message, "", f.json, kFetchExitUsage);
  FetchOptions o;
  o.dir = (std::filesystem::path(f.dest) / dataset->name).string();
  o.base_url = f.base_url;
  o.train_shards = f.shards;
  o.retries = f.retries;
  o.backoff = std::chrono::milliseconds(f.backoff_ms);
  o.max_backoff = std::chrono::milliseconds(f.max_backoff_ms);
  FetchProgress progress(stderr, isatty(STDERR_FILENO) ? FetchProgress::Style::kBar
                                                        : FetchProgress::Style::kLines,
                         NowSeconds);
  double start = NowSeconds();
  Result<FetchReport> report = FetchDataset(*dataset, o, **curl, HooksFor(progress));
  if (!report.ok()) {
    bool usage = report.error().key == "shards" || report.error().key == "retries" ||
                 report.error().key == "backoff-ms";
    if (!usage) progress.Note("fetch failed; " + o.dir + "/manifest.json is unchanged");
    return Fail(report.error().message, usage ? "" : report.error().key, f.json,
                usage ? kFetchExitUsage : kFetchExitFailed);
  }
  double seconds = NowSeconds() - start;
  progress.Note(dataset->name + " ready in " + o.dir + ": " +
                std::to_string(report->manifest.shards.size()) + " shards, " +
                FormatBytes(report->received_bytes) + " downloaded in " +
                FormatDuration(seconds));
  if (f.json) std::cout << SummaryJson(*report, dataset->name, seconds).dump(2) << "\n";
  return kFetchExitOk;
}

int RunVerify(const std::string& dir, bool checksums, bool json) {
  Result<DatasetManifest> m = ReadManifest(dir);
  if (!m.ok()) return Fail(m.error().message, "", json, kFetchExitInvalid);
  Status s = VerifyDataset(dir, *m, checksums ? VerifyDepth::kChecksums : VerifyDepth::kHeaders);
  if (!s.ok()) return Fail(dir + ": " + s.message(), s.error().key, json, kFetchExitInvalid);
  if (json) {
    std::cout << J{{"dir", dir}, {"shards", m->shards.size()}, {"checksums", checksums},
                   {"tokens", {{"train", m->Tokens("train")}, {"val", m->Tokens("val")}}}}
                     .dump(2)
              << "\n";
  } else {
    std::cerr << "ablate-data: " << dir << ": " << m->shards.size() << " shards match "
              << "manifest.json (" << (checksums ? "sizes, headers and SHA-256" : "sizes and headers")
              << ")\n";
  }
  return kFetchExitOk;
}

}  // namespace ablate
