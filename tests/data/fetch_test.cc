// `ablate-data fetch` as a child process against an HTTP server in this process (cpp-httplib on
// a loopback port the OS picks) that serves generated shards and injects faults: a connection
// cut mid-file, a truncated file, a corrupt header, a 404, a busy server. Every case must end in
// a valid dataset or in an error naming the shard, and never leave a file with a final name that
// is not the served shard.
#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/thread_annotations.h"
#include "tests/data/shard_bytes.h"
#include "tests/util/subprocess.h"
#include "trainer/config/sha256.h"
#include "trainer/data/dataset_manifest.h"

namespace ablate::testing {
namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;

enum class Fault {
  kNone,
  kCutOnce,        // the first response stops after 40% of the file and closes the connection
  kCutAlways,      // every response stops after 30% more of the file
  kTruncated,      // always serves the first half, with a matching Content-Length
  kCorruptHeader,  // always serves the file with a wrong magic number
  kBusyTwice,      // 503 twice, then the file
};

struct Served {
  std::string bytes;
  Fault fault = Fault::kNone;
  int requests = 0;
  std::vector<std::string> ranges;  // the Range header of each request ("" for none)
};

// Serves /hf/resolve/main/<name> from memory; unknown names get a 404 like Hugging Face's.
class ShardServer {
 public:
  ShardServer() {
    server_.Get("/hf/resolve/main/(.+)", [this](const httplib::Request& req,
                                                httplib::Response& res) { Handle(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~ShardServer() {
    server_.stop();
    thread_.join();
  }

  void Add(const std::string& name, std::string bytes, Fault fault = Fault::kNone) {
    AnnotatedMutexLock lock(&mu_);
    files_[name] = Served{std::move(bytes), fault, 0, {}};
  }
  std::string BaseUrl() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hf/resolve/main"; }
  Served Get(const std::string& name) {
    AnnotatedMutexLock lock(&mu_);
    return files_[name];
  }
  int TotalRequests() {
    AnnotatedMutexLock lock(&mu_);
    return total_requests_;
  }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res);
  void ServeCut(Served& f, size_t stop_at, httplib::Response& res);

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  AnnotatedMutex mu_;
  std::map<std::string, Served> files_ ABLATE_GUARDED_BY(mu_);
  int total_requests_ ABLATE_GUARDED_BY(mu_) = 0;
};

void ShardServer::Handle(const httplib::Request& req, httplib::Response& res) {
  AnnotatedMutexLock lock(&mu_);
  ++total_requests_;
  auto it = files_.find(req.matches[1].str());
  if (it == files_.end()) {
    res.status = 404;
    res.set_content("Entry not found", "text/plain");
    return;
  }
  Served& f = it->second;
  f.ranges.push_back(req.get_header_value("Range"));
  int n = ++f.requests;
  std::string body = f.bytes;
  switch (f.fault) {
    case Fault::kCutOnce:
      if (n == 1) return ServeCut(f, f.bytes.size() * 4 / 10, res);
      break;
    case Fault::kCutAlways:
      return ServeCut(f, f.bytes.size() * 3 * n / 10, res);
    case Fault::kTruncated:
      body = body.substr(0, kShardHeaderBytes + (body.size() - kShardHeaderBytes) / 4 * 2);
      break;
    case Fault::kCorruptHeader:
      body[0] ^= 0x5a;
      break;
    case Fault::kBusyTwice:
      if (n <= 2) {
        res.status = 503;
        res.set_content("busy", "text/plain");
        return;
      }
      break;
    case Fault::kNone:
      break;
  }
  res.set_content(body, "application/octet-stream");  // httplib answers Range with a 206
}

// Announces the whole file (or the requested range of it) but sends bytes only up to file offset
// `stop_at`, then drops the connection.
void ShardServer::ServeCut(Served& f, size_t stop_at, httplib::Response& res) {
  const std::string* bytes = &f.bytes;
  res.set_content_provider(bytes->size(), "application/octet-stream",
                           [bytes, stop_at](size_t offset, size_t length, httplib::DataSink& sink) {
                             size_t end = std::min(offset + length, stop_at);
                             if (end > offset) sink.write(bytes->data() + offset, end - offset);
                             return false;  // abort: the client sees a cut connection
                           });
}

constexpr const char* kVal = "fineweb_val_000000.bin";
std::string Train(int i) { return "fineweb_train_00000" + std::to_string(i) + ".bin"; }

class FetchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Add(kVal, ShardBytes(60000, 0));
    for (int i = 1; i <= 3; ++i) server_.Add(Train(i), ShardBytes(150000 + i, i));
  }

  ProcessResult Fetch(int shards, int retries = 3, int backoff_ms = 1) {
    return RunProcess({ABLATE_DATA_BIN, "fetch", "fineweb10B", "--shards", std::to_string(shards),
                       "--dest", dest_.path(), "--base-url", server_.BaseUrl(), "--retries",
                       std::to_string(retries), "--backoff-ms", std::to_string(backoff_ms),
                       "--json"},
                      {}, std::chrono::seconds(60));
  }

  std::string Dir() const { return dest_.path() + "/fineweb10B"; }

  // Every file with a final name is byte for byte the served shard; returns their names. (Not
  // final names: *.part, manifest.json and the .fetch.lock that keeps two fetches apart.)
  std::vector<std::string> FinalFiles() {
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(Dir())) {
      std::string name = e.path().filename().string();
      if (name.ends_with(".part") || name == "manifest.json" || name == ".fetch.lock") continue;
      EXPECT_EQ(ReadFile(e.path().string()), server_.Get(name).bytes) << name << " is not valid";
      names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  bool Exists(const std::string& name) const { return fs::exists(Dir() + "/" + name); }

  ShardServer server_;
  TempDir dest_;
};

TEST_F(FetchTest, FullFetchWritesAValidDatasetAndARerunDownloadsNothing) {
  ProcessResult r = Fetch(3);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  J summary = J::parse(r.out);
  ASSERT_EQ(summary["shards"].size(), 4u);
  EXPECT_EQ(summary["shards"][0]["name"], kVal);
  EXPECT_EQ(summary["tokens"]["train"], 150001 + 150002 + 150003);
  EXPECT_EQ(FinalFiles(), (std::vector<std::string>{Train(1), Train(2), Train(3), kVal}));

  Result<DatasetManifest> m = ReadManifest(Dir());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(VerifyDataset(Dir(), *m, VerifyDepth::kChecksums).ok());
  EXPECT_EQ(m->train_pattern, "fineweb_train_*.bin");
  EXPECT_EQ(m->fields["source"], server_.BaseUrl());
  ASSERT_EQ(m->shards.size(), 4u);
  EXPECT_EQ(m->shards[1].name, Train(1));
  EXPECT_EQ(m->shards[1].sha256, Sha256Hex(server_.Get(Train(1)).bytes));
  EXPECT_NE(r.err.find("[4/4] " + Train(3) + ": 301.0 kB in"), std::string::npos) << r.err;

  int before = server_.TotalRequests();
  ProcessResult again = Fetch(3);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(server_.TotalRequests(), before);
  EXPECT_EQ(J::parse(again.out)["shards"][2]["downloaded"], false);
}

TEST_F(FetchTest, ResumesWithARangeRequestAfterTheConnectionIsCut) {
  server_.Add(Train(2), ShardBytes(150002, 2), Fault::kCutOnce);
  ProcessResult r = Fetch(3);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Served s = server_.Get(Train(2));
  ASSERT_EQ(s.requests, 2);
  EXPECT_EQ(s.ranges[0], "");
  EXPECT_EQ(s.ranges[1], "bytes=" + std::to_string(s.bytes.size() * 4 / 10) + "-");
  EXPECT_EQ(J::parse(r.out)["shards"][2]["received_bytes"], s.bytes.size());  // no byte twice
  EXPECT_NE(r.err.find("shard " + Train(2) + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("retry 1 of 3 in 1 ms"), std::string::npos) << r.err;
  EXPECT_EQ(FinalFiles().size(), 4u);
  Result<DatasetManifest> m = ReadManifest(Dir());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(VerifyDataset(Dir(), *m, VerifyDepth::kChecksums).ok());
}

TEST_F(FetchTest, ConnectionsCutEveryTimeLeaveOnlyAPartFile) {
  server_.Add(Train(1), ShardBytes(150001, 1), Fault::kCutAlways);
  ProcessResult r = Fetch(2, /*retries=*/1);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("shard " + Train(1) + ": "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(gave up after 2 attempts)"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(Train(1)));
  EXPECT_EQ(fs::file_size(Dir() + "/" + Train(1) + ".part"),
            server_.Get(Train(1)).bytes.size() * 6 / 10);  // resumable
  EXPECT_FALSE(Exists("manifest.json"));
  EXPECT_EQ(FinalFiles(), std::vector<std::string>{kVal});
  EXPECT_EQ(J::parse(r.out)["shard"], Train(1));
}

TEST_F(FetchTest, ATruncatedFileIsRejectedAndNeverGetsItsName) {
  server_.Add(Train(1), ShardBytes(150001, 1), Fault::kTruncated);
  ProcessResult r = Fetch(2);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find("shard " + Train(1)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("but the header's token count 150001 needs"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(gave up after 4 attempts)"), std::string::npos) << r.err;
  EXPECT_EQ(server_.Get(Train(1)).requests, 4);
  EXPECT_FALSE(Exists(Train(1)));
  EXPECT_FALSE(Exists(Train(1) + ".part"));  // a wrong file is not kept for resuming
  EXPECT_FALSE(Exists("manifest.json"));
  EXPECT_EQ(FinalFiles(), std::vector<std::string>{kVal});
}

TEST_F(FetchTest, ACorruptHeaderIsRejectedAndNothingElseIsFetched) {
  server_.Add(kVal, ShardBytes(60000, 0), Fault::kCorruptHeader);
  ProcessResult r = Fetch(3, /*retries=*/0);
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_NE(r.err.find(kVal + std::string(".part: byte 0: wrong magic")), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("(gave up after 1 attempt)"), std::string::npos) << r.err;
  EXPECT_TRUE(FinalFiles().empty());
  EXPECT_FALSE(Exists(std::string(kVal) + ".part"));
  EXPECT_EQ(server_.Get(Train(1)).requests, 0);
}

TEST_F(FetchTest, A404IsNotRetriedAndARerunFetchesOnlyWhatIsMissing) {
  ProcessResult r = Fetch(4);  // the server has no fineweb_train_000004.bin
  EXPECT_EQ(r.exit_code, 4) << r.err;
  std::string want = "shard fineweb_train_000004.bin: HTTP 404 (Entry not found) from " +
                     server_.BaseUrl() + "/fineweb_train_000004.bin";
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("retry"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists("manifest.json"));  // not advertised: it is not the dataset asked for
  EXPECT_FALSE(Exists("fineweb_train_000004.bin"));

  EXPECT_EQ(FinalFiles().size(), 4u);
  server_.Add("fineweb_train_000004.bin", ShardBytes(1000, 4));
  int val_requests = server_.Get(kVal).requests;
  ProcessResult again = Fetch(4);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(server_.Get(kVal).requests, val_requests);
  EXPECT_EQ(FinalFiles().size(), 5u);
  Result<DatasetManifest> m = ReadManifest(Dir());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->shards.size(), 5u);
  EXPECT_TRUE(VerifyDataset(Dir(), *m, VerifyDepth::kChecksums).ok());
}

TEST_F(FetchTest, ABusyServerIsRetriedWithDoublingWaits) {
  server_.Add(Train(1), ShardBytes(150001, 1), Fault::kBusyTwice);
  ProcessResult r = Fetch(1, /*retries=*/3, /*backoff_ms=*/5);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(server_.Get(Train(1)).requests, 3);
  EXPECT_NE(r.err.find("HTTP 503 (busy) from"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("retry 1 of 3 in 5 ms"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("retry 2 of 3 in 10 ms"), std::string::npos) << r.err;
  EXPECT_EQ(J::parse(r.out)["shards"][1]["attempts"], 3);
}

TEST_F(FetchTest, AFetchOfFewerShardsKeepsTheOnesFetchedBefore) {
  ASSERT_EQ(Fetch(3).exit_code, 0);
  ProcessResult r = Fetch(1);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Result<DatasetManifest> m = ReadManifest(Dir());
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->shards.size(), 4u);  // the manifest lists every shard its patterns match
  EXPECT_TRUE(VerifyDataset(Dir(), *m, VerifyDepth::kHeaders).ok());
}

TEST_F(FetchTest, BadFlagsAreUsageErrors) {
  ProcessResult r = Fetch(104);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--shards must be in [1, 103] for fineweb10B, got 104"), std::string::npos)
      << r.err;
  ProcessResult unknown = RunProcess({ABLATE_DATA_BIN, "fetch", "fineweb9B", "--shards", "1",
                                      "--dest", dest_.path()});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown dataset 'fineweb9B'; fetch knows: fineweb10B"),
            std::string::npos)
      << unknown.err;
  EXPECT_EQ(server_.TotalRequests(), 0);
}

}  // namespace
}  // namespace ablate::testing
