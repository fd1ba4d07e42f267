// Shard fetching: one shard at a time, each through ".part", validation and rename(2).
#include "trainer/data/shard_fetcher.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "trainer/data/shard_reader.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;

std::string ShardName(const std::string& prefix, int number) {
  char digits[16];
  std::snprintf(digits, sizeof(digits), "%06d", number);
  return prefix + digits + ".bin";
}

const std::vector<RemoteDataset>& Remotes() {
  // Reference sheet §6: HF dataset repository kjj0/fineweb10B-gpt2, val shard 000000 (10^8
  // tokens), train shards 000001..000103; GPT-2 tokens with <|endoftext|> (50256) as BOS.
  static const std::vector<RemoteDataset>* remotes = new std::vector<RemoteDataset>{
      {"fineweb10B", "https://huggingface.co/datasets/kjj0/fineweb10B-gpt2/resolve/main",
       "fineweb_train_", "fineweb_val_", 1, 103, "gpt2", 50257, 50256},
  };
  return *remotes;
}

std::string JoinUrl(std::string base, const std::string& name) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + "/" + name;
}

// Flushes a file to disk (data before its name, so a crash never leaves a named half-file).
Status SyncPath(const std::string& path, int flags) {
  int fd = open(path.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return Error{"cannot open " + path + ": " + std::strerror(errno), ""};
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0) return Error{"cannot sync " + path + ": " + std::strerror(err), ""};
  return Status();
}

// Holds an exclusive flock(2) on `dir`/.fetch.lock while a fetch runs, so that two fetches into
// one directory do not write the same .part file.
class FetchLock {
 public:
  ~FetchLock() {
    if (fd_ >= 0) close(fd_);  // releases the lock
  }
  Status Acquire(const std::string& dir) {
    std::string path = (fs::path(dir) / ".fetch.lock").string();
    fd_ = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) return Error{"cannot open " + path + ": " + std::strerror(errno), "dest"};
    if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      return Error{"another ablate-data fetch is writing to " + dir + " (" + path + " is locked)",
                   "dest"};
    }
    return Status();
  }

 private:
  int fd_ = -1;
};

class Fetcher {
 public:
  Fetcher(const RemoteDataset& d, const FetchOptions& o, Downloader& dl, const FetchHooks& h)
      : dataset_(d), options_(o), downloader_(dl), hooks_(h) {
    base_url_ = o.base_url.empty() ? d.default_base_url : o.base_url;
  }

  Result<FetchReport> Run();

 private:
  struct Wanted {
    std::string name, split;
  };
  std::vector<Wanted> WantedShards() const;
  void LoadPreviousManifest();
  Result<FetchedShard> Ensure(const Wanted& w);
  Result<FetchedShard> Download(const Wanted& w);
  Result<ShardEntry> CheckFile(const std::string& path, const Wanted& w, int64_t expected);
  Result<ShardEntry> Adopt(const std::string& name, const std::string& split);
  Result<DatasetManifest> BuildManifest(const std::vector<FetchedShard>& fetched);
  Status Promote(const std::string& part, const std::string& final_path);
  void Log(const std::string& line) const {
    if (hooks_.log) hooks_.log(line);
  }
  double Now() const;
  std::string PathOf(const std::string& name) const {
    return (fs::path(options_.dir) / name).string();
  }

  const RemoteDataset& dataset_;
  const FetchOptions& options_;
  Downloader& downloader_;
  const FetchHooks& hooks_;
  std::string base_url_;
  std::map<std::string, ShardEntry> previous_;  // the old manifest's entries, by name
};

double Fetcher::Now() const {
  if (hooks_.now_s) return hooks_.now_s();
  using Seconds = std::chrono::duration<double>;
  return Seconds(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<Fetcher::Wanted> Fetcher::WantedShards() const {
  std::vector<Wanted> out = {{dataset_.ValShard(), "val"}};
  for (int i = 0; i < options_.train_shards; ++i) out.push_back({dataset_.TrainShard(i), "train"});
  return out;
}

Status CheckOptions(const RemoteDataset& d, const FetchOptions& o) {
  if (o.dir.empty()) return Error{"--dest is empty", "dest"};
  if (o.train_shards < 1 || o.train_shards > d.train_shards) {
    return Error{"--shards must be in [1, " + std::to_string(d.train_shards) + "] for " + d.name +
                     ", got " + std::to_string(o.train_shards), "shards"};
  }
  if (o.retries < 0) return Error{"--retries must be >= 0", "retries"};
  if (o.backoff.count() < 0 || o.max_backoff < o.backoff) {
    return Error{"--backoff-ms must be >= 0 and at most the maximum backoff", "backoff-ms"};
  }
  return Status();
}

Result<FetchReport> Fetcher::Run() {
  if (Status s = CheckOptions(dataset_, options_); !s.ok()) return s.error();
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  if (ec) return Error{"cannot create " + options_.dir + ": " + ec.message(), "dest"};
  FetchLock lock;
  if (Status s = lock.Acquire(options_.dir); !s.ok()) return s.error();
  LoadPreviousManifest();
  FetchReport report;
  report.dir = options_.dir;
  std::vector<Wanted> wanted = WantedShards();
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (hooks_.begin_shard) hooks_.begin_shard(int(i), int(wanted.size()), wanted[i].name);
    Result<FetchedShard> f = Ensure(wanted[i]);
    if (!f.ok()) return f.error();
    if (hooks_.end_shard) hooks_.end_shard(*f);
    report.received_bytes += f->received_bytes;
    report.shards.push_back(*f);
  }
  Result<DatasetManifest> manifest = BuildManifest(report.shards);
  if (!manifest.ok()) return manifest.error();
  if (Status s = WriteManifest(options_.dir, *manifest); !s.ok()) return s.error();
  report.manifest = *manifest;
  return report;
}

// Remembers the checksums of an earlier fetch, so that files already in place are not re-hashed.
void Fetcher::LoadPreviousManifest() {
  if (!fs::exists(PathOf(kManifestFile))) return;
  Result<DatasetManifest> old = ReadManifest(options_.dir);
  if (!old.ok()) {
    Log("ignoring the old manifest: " + old.error().message);
    return;
  }
  for (const ShardEntry& e : old->shards) previous_[e.name] = e;
}

// A shard already under its final name is kept when its header is valid.
Result<FetchedShard> Fetcher::Ensure(const Wanted& w) {
  std::string path = PathOf(w.name);
  if (fs::exists(path)) {
    Result<ShardEntry> e = Adopt(w.name, w.split);
    if (e.ok()) return FetchedShard{*e, false, 0, 0, 0.0};
    Log(e.error().message + "; downloading it again");
    std::error_code ec;
    fs::remove(path, ec);
  }
  return Download(w);
}

// Checks a file already in place; reuses the old manifest's checksum when the size agrees.
Result<ShardEntry> Fetcher::Adopt(const std::string& name, const std::string& split) {
  Result<ShardHeader> h = ReadShardHeader(PathOf(name));
  if (!h.ok()) return h.error();
  auto it = previous_.find(name);
  if (it != previous_.end() && it->second.bytes == h->file_bytes && !it->second.sha256.empty() &&
      it->second.tokens == h->num_tokens) {
    return it->second;
  }
  return CheckFile(PathOf(name), Wanted{name, split}, -1);
}

Result<FetchedShard> Fetcher::Download(const Wanted& w) {
  const std::string url = JoinUrl(base_url_, w.name), final_path = PathOf(w.name);
  const std::string part = final_path + ".part";
  FetchedShard out;
  double start = Now();
  for (int attempt = 1;; ++attempt) {
    DownloadResult r = downloader_.Download(url, part, hooks_.progress);
    out.attempts = attempt;
    out.received_bytes += r.received_bytes;
    std::string why = r.error;
    if (r.outcome == DownloadResult::Outcome::kComplete) {
      Result<ShardEntry> e = CheckFile(part, w, r.expected_bytes);
      if (e.ok()) {
        if (Status s = Promote(part, final_path); !s.ok()) return Error{s.message(), w.name};
        out.entry = *e;
        out.downloaded = true;
        out.seconds = Now() - start;
        return out;
      }
      why = e.error().message;
      std::remove(part.c_str());  // a wrong file is not resumed
    } else if (r.outcome == DownloadResult::Outcome::kPermanent) {
      return Error{"shard " + w.name + ": " + why, w.name};
    }
    if (attempt > options_.retries) {
      return Error{"shard " + w.name + ": " + why + " (gave up after " + std::to_string(attempt) +
                       (attempt == 1 ? " attempt)" : " attempts)"), w.name};
    }
    std::chrono::milliseconds wait = RetryDelay(options_, attempt);
    Log("shard " + w.name + ": " + why + "; retry " + std::to_string(attempt) + " of " +
        std::to_string(options_.retries) + " in " + std::to_string(wait.count()) + " ms");
    if (hooks_.sleep) {
      hooks_.sleep(wait);
    } else {
      std::this_thread::sleep_for(wait);
    }
  }
}

// Header and size, the size the server announced, and every token below the vocabulary.
Result<ShardEntry> Fetcher::CheckFile(const std::string& path, const Wanted& w, int64_t expected) {
  std::error_code ec;
  int64_t size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) return Error{"shard " + path + ": " + ec.message(), w.name};
  if (expected >= 0 && size != expected) {
    return Error{"shard " + path + ": " + std::to_string(size) + " bytes, the server announced " +
                     std::to_string(expected), w.name};
  }
  Result<ShardHeader> h = ReadShardHeader(path);
  if (!h.ok()) return Error{h.error().message, w.name};
  Result<ShardDigest> d = DigestShard(path);
  if (!d.ok()) return Error{d.error().message, w.name};
  if (d->max_token >= dataset_.vocab_size) {
    return Error{"shard " + path + ": token " + std::to_string(d->max_token) +
                     " is not below the " + dataset_.tokenizer + " vocabulary size " +
                     std::to_string(dataset_.vocab_size), w.name};
  }
  return ShardEntry{w.name, w.split, h->num_tokens, h->file_bytes, d->sha256};
}

Status Fetcher::Promote(const std::string& part, const std::string& final_path) {
  if (Status s = SyncPath(part, O_RDONLY); !s.ok()) return s;
  if (std::rename(part.c_str(), final_path.c_str()) != 0) {
    return Error{"cannot rename " + part + " to " + final_path + ": " + std::strerror(errno), ""};
  }
  return SyncPath(options_.dir, O_RDONLY | O_DIRECTORY);
}

// The requested shards, plus the dataset's other shards already in the directory (an earlier
// fetch of more shards), so that the manifest lists every file the patterns match.
Result<DatasetManifest> Fetcher::BuildManifest(const std::vector<FetchedShard>& fetched) {
  DatasetManifest m;
  m.train_pattern = dataset_.train_prefix + "*.bin";
  m.val_pattern = dataset_.val_prefix + "*.bin";
  m.fields = {{"name", dataset_.name},          {"source", base_url_},
              {"tokenizer", dataset_.tokenizer}, {"vocab_size", dataset_.vocab_size},
              {"bos_token", dataset_.bos_token}};
  std::set<std::string> have;
  for (const FetchedShard& f : fetched) have.insert(f.entry.name);
  std::vector<ShardEntry> entries;
  for (const FetchedShard& f : fetched) entries.push_back(f.entry);
  for (auto [pattern, split] : {std::pair{m.val_pattern, "val"}, {m.train_pattern, "train"}}) {
    for (const std::string& name : MatchingFiles(options_.dir, pattern)) {
      if (have.count(name)) continue;
      Result<ShardEntry> e = Adopt(name, split);
      if (!e.ok()) {
        return Error{e.error().message + " (it matches " + pattern + "; remove it or fetch it)",
                     name};
      }
      entries.push_back(*e);
    }
  }
  std::stable_sort(entries.begin(), entries.end(), [](const ShardEntry& a, const ShardEntry& b) {
    return a.split != b.split ? a.split == "val" : a.name < b.name;
  });
  m.shards = entries;
  return m;
}

}  // namespace

std::string RemoteDataset::ValShard() const { return ShardName(val_prefix, 0); }

std::string RemoteDataset::TrainShard(int i) const {
  return ShardName(train_prefix, first_train_index + i);
}

const RemoteDataset* FindRemoteDataset(std::string_view name) {
  for (const RemoteDataset& d : Remotes()) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

std::vector<std::string> RemoteDatasetNames() {
  std::vector<std::string> names;
  for (const RemoteDataset& d : Remotes()) names.push_back(d.name);
  return names;
}

Result<FetchReport> FetchDataset(const RemoteDataset& dataset, const FetchOptions& options,
                                 Downloader& downloader, const FetchHooks& hooks) {
  return Fetcher(dataset, options, downloader, hooks).Run();
}

std::chrono::milliseconds RetryDelay(const FetchOptions& options, int retry) {
  int64_t ms = options.backoff.count();
  for (int i = 1; i < retry && ms < options.max_backoff.count(); ++i) ms *= 2;
  return std::chrono::milliseconds(std::min<int64_t>(ms, options.max_backoff.count()));
}

}  // namespace ablate
