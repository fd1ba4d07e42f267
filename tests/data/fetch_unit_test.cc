// The fetcher's logic without a network: a scripted Downloader, a fake sleep and a fake clock.
// Covers the retry schedule, resuming through the Downloader contract, what counts as permanent,
// and the progress text.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>

#include "tests/data/shard_bytes.h"
#include "tests/util/subprocess.h"
#include "trainer/config/sha256.h"
#include "trainer/data/fetch_progress.h"
#include "trainer/data/shard_digest.h"
#include "trainer/data/shard_fetcher.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;
using Outcome = DownloadResult::Outcome;
using testing::ShardBytes;
using testing::TempDir;

// Serves files from memory. Each step appends at most `chunk` bytes to the part file and ends
// with the scripted outcome; by default it finishes the file.
class ScriptedDownloader : public Downloader {
 public:
  struct Step {
    Outcome outcome = Outcome::kComplete;
    int64_t bytes = -1;  // bytes to append (-1: the rest)
    std::string error;
  };
  std::map<std::string, std::string> files;  // by file name
  std::map<std::string, std::deque<Step>> script;
  std::vector<std::pair<std::string, int64_t>> calls;  // (name, part size when called)

  DownloadResult Download(const std::string& url, const std::string& part,
                          const DownloadProgressFn& progress) override {
    std::string name = url.substr(url.rfind('/') + 1);
    int64_t have = fs::exists(part) ? static_cast<int64_t>(fs::file_size(part)) : 0;
    calls.push_back({name, have});
    Step step;
    if (!script[name].empty()) {
      step = script[name].front();
      script[name].pop_front();
    }
    if (step.outcome == Outcome::kPermanent) return {step.outcome, step.error, -1, 0};
    const std::string& full = files.at(name);
    int64_t n = step.bytes < 0 ? static_cast<int64_t>(full.size()) - have : step.bytes;
    std::ofstream(part, std::ios::app | std::ios::binary).write(full.data() + have, n);
    if (progress) progress(have + n, static_cast<int64_t>(full.size()));
    int64_t expected = static_cast<int64_t>(full.size());
    return {step.outcome, step.error, step.outcome == Outcome::kComplete ? expected : -1, n};
  }
};

class FetcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dl_.files["fineweb_val_000000.bin"] = ShardBytes(500, 0);
    dl_.files["fineweb_train_000001.bin"] = ShardBytes(1000, 1);
    dl_.files["fineweb_train_000002.bin"] = ShardBytes(1000, 2);
    options_.dir = dir_.path() + "/fineweb10B";
    options_.base_url = "http://mirror/x/";
    options_.train_shards = 2;
    options_.retries = 3;
    options_.backoff = std::chrono::milliseconds(100);
    options_.max_backoff = std::chrono::milliseconds(250);
    hooks_.sleep = [this](std::chrono::milliseconds ms) { slept_.push_back(ms.count()); };
    hooks_.log = [this](const std::string& line) { log_.push_back(line); };
  }

  Result<FetchReport> Fetch() {
    return FetchDataset(*FindRemoteDataset("fineweb10B"), options_, dl_, hooks_);
  }

  TempDir dir_;
  ScriptedDownloader dl_;
  FetchOptions options_;
  FetchHooks hooks_;
  std::vector<int64_t> slept_;
  std::vector<std::string> log_;
};

TEST_F(FetcherTest, ResumesAfterCutsWithCappedDoublingWaits) {
  dl_.script["fineweb_train_000001.bin"] = {{Outcome::kRetryable, 300, "cut"},
                                            {Outcome::kRetryable, 300, "cut"},
                                            {Outcome::kRetryable, 0, "timeout"}};
  Result<FetchReport> r = Fetch();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(slept_, (std::vector<int64_t>{100, 200, 250}));
  std::vector<std::pair<std::string, int64_t>> want = {
      {"fineweb_val_000000.bin", 0},   {"fineweb_train_000001.bin", 0},
      {"fineweb_train_000001.bin", 300}, {"fineweb_train_000001.bin", 600},
      {"fineweb_train_000001.bin", 600}, {"fineweb_train_000002.bin", 0}};
  EXPECT_EQ(dl_.calls, want);
  EXPECT_EQ(r->shards[1].attempts, 4);
  EXPECT_EQ(r->shards[1].received_bytes, 3024);
  EXPECT_EQ(log_[0], "shard fineweb_train_000001.bin: cut; retry 1 of 3 in 100 ms");
  EXPECT_EQ(r->manifest.fields["source"], "http://mirror/x/");
  EXPECT_EQ(r->manifest.Tokens("train"), 2000);
}

TEST_F(FetcherTest, PermanentErrorsAreNotRetriedAndLeaveNoManifest) {
  dl_.script["fineweb_train_000002.bin"] = {{Outcome::kPermanent, 0, "HTTP 403 from x"}};
  Result<FetchReport> r = Fetch();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "shard fineweb_train_000002.bin: HTTP 403 from x");
  EXPECT_EQ(r.error().key, "fineweb_train_000002.bin");
  EXPECT_TRUE(slept_.empty());
  EXPECT_FALSE(fs::exists(options_.dir + "/manifest.json"));
  EXPECT_TRUE(fs::exists(options_.dir + "/fineweb_train_000001.bin"));
}

TEST_F(FetcherTest, ATokenOutsideTheVocabularyIsRejected) {
  std::string& bytes = dl_.files["fineweb_train_000001.bin"];
  bytes[kShardHeaderBytes + 10] = '\xff';
  bytes[kShardHeaderBytes + 11] = '\xff';
  options_.retries = 0;
  Result<FetchReport> r = Fetch();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("token 65535 is not below the gpt2 vocabulary size 50257"),
            std::string::npos)
      << r.error().message;
  EXPECT_FALSE(fs::exists(options_.dir + "/fineweb_train_000001.bin"));
  EXPECT_FALSE(fs::exists(options_.dir + "/fineweb_train_000001.bin.part"));
}

TEST_F(FetcherTest, AnInvalidFileUnderAFinalNameIsReplaced) {
  fs::create_directories(options_.dir);
  testing::WriteFile(options_.dir + "/fineweb_train_000002.bin", "not a shard");
  Result<FetchReport> r = Fetch();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->shards[2].downloaded);
  EXPECT_NE(log_.at(0).find("truncated header"), std::string::npos) << log_[0];
  EXPECT_EQ(testing::ReadFile(options_.dir + "/fineweb_train_000002.bin"),
            dl_.files["fineweb_train_000002.bin"]);
}

TEST_F(FetcherTest, ASecondFetchIntoTheSameDirectoryIsRefused) {
  fs::create_directories(options_.dir);
  int fd = open((options_.dir + "/.fetch.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  Result<FetchReport> r = Fetch();
  close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "another ablate-data fetch is writing to " + options_.dir + " (" +
                                   options_.dir + "/.fetch.lock is locked)");
  EXPECT_TRUE(dl_.calls.empty());
  EXPECT_TRUE(Fetch().ok());  // the lock is gone with its holder
}

TEST(ShardDigestTest, AgreesWithThePortableSha256AndKnownDigests) {
  EXPECT_EQ(ShardSha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  for (int64_t tokens : {0, 1, 31, 32, 1000, 100000}) {
    std::string bytes = ShardBytes(tokens, static_cast<uint32_t>(tokens));
    EXPECT_EQ(ShardSha256Hex(bytes), Sha256Hex(bytes)) << ShardSha256Backend() << " " << tokens;
  }
}

TEST(RetryDelayTest, DoublesUpToTheCap) {
  FetchOptions o;
  o.backoff = std::chrono::milliseconds(1000);
  o.max_backoff = std::chrono::milliseconds(60000);
  std::vector<int64_t> got;
  for (int i = 1; i <= 8; ++i) got.push_back(RetryDelay(o, i).count());
  EXPECT_EQ(got, (std::vector<int64_t>{1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000}));
}

TEST(FetchProgressTest, FormatsBytesDurationsAndAPlainLine) {
  EXPECT_EQ(FormatBytes(999), "999 B");
  EXPECT_EQ(FormatBytes(200001024), "200.0 MB");
  EXPECT_EQ(FormatBytes(10255324043LL * 2), "20.5 GB");
  EXPECT_EQ(FormatDuration(7), "0:07");
  EXPECT_EQ(FormatDuration(3723), "1:02:03");
  EXPECT_EQ(FormatDuration(-1), "?");

  double now = 0;
  std::FILE* out = std::tmpfile();
  FetchProgress p(out, FetchProgress::Style::kLines, [&] { return now; }, 10.0);
  p.BeginShard(1, 9, "fineweb_train_000001.bin");
  p.Update(50'000'000, 200'000'000);  // resumed: the first 50 MB were already there
  now = 5;
  p.Update(100'000'000, 200'000'000);  // too soon for a line
  now = 10;
  p.Update(150'000'000, 200'000'000);
  std::rewind(out);
  char buf[512] = {0};
  std::string text(buf, std::fread(buf, 1, sizeof(buf) - 1, out));
  std::fclose(out);
  EXPECT_EQ(text,
            "ablate-data: [2/9] fineweb_train_000001.bin 150.0 MB/200.0 MB 75% 10.0 MB/s "
            "ETA 0:05\n");
}

}  // namespace
}  // namespace ablate
