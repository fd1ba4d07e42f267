// Dataset discovery: a worker advertises a dataset only when its directory holds exactly the
// shards its manifest lists, with the listed sizes and valid headers; otherwise it says why.
#include "worker/datasets.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>

#include "tests/util/subprocess.h"
#include "trainer/data/dataset_manifest.h"
#include "trainer/data/shard_reader.h"
#include "trainer/data/shard_writer.h"

namespace ablate::worker {
namespace {

namespace fs = std::filesystem;
using ablate::testing::TempDir;

struct Layout {
  std::string train_prefix = "train_";
  std::string val_prefix = "val_";
  int train_shards = 2;
};

// A valid dataset `name` under `root` with shards of 100·(i+1) tokens.
std::string MakeDataset(const std::string& root, const std::string& name, const Layout& l = {}) {
  std::string dir = root + "/" + name;
  fs::create_directories(dir);
  DatasetManifest m;
  m.train_pattern = l.train_prefix + "*.bin";
  m.val_pattern = l.val_prefix + "*.bin";
  auto add = [&](const std::string& file, const std::string& split, int tokens) {
    std::vector<uint16_t> t(tokens);
    std::iota(t.begin(), t.end(), uint16_t{0});
    EXPECT_TRUE(WriteShard(dir + "/" + file, t).ok());
    Result<ShardDigest> d = DigestShard(dir + "/" + file);
    EXPECT_TRUE(d.ok());
    m.shards.push_back({file, split, tokens, kShardHeaderBytes + 2 * tokens, d->sha256});
  };
  add(l.val_prefix + "000000.bin", "val", 50);
  for (int i = 0; i < l.train_shards; ++i) {
    add(l.train_prefix + "00000" + std::to_string(i + 1) + ".bin", "train", 100 * (i + 1));
  }
  EXPECT_TRUE(WriteManifest(dir, m).ok());
  return dir;
}

std::string ProblemOf(const std::string& root, const std::string& name) {
  for (const DatasetCheck& c : CheckDatasets(root)) {
    if (c.name == name) return c.problem;
  }
  return "(not checked)";
}

TEST(DatasetsTest, ValidDatasetsAreListedWithTheirPatterns) {
  TempDir root;
  MakeDataset(root.path(), "debian-text");
  MakeDataset(root.path(), "fineweb10B", {"fineweb_train_", "fineweb_val_", 3});
  EXPECT_EQ(ListDatasets(root.path()), (std::vector<std::string>{"debian-text", "fineweb10B"}));
  EXPECT_EQ(TrainGlob(root.path(), "fineweb10B"),
            root.path() + "/fineweb10B/fineweb_train_*.bin");
  EXPECT_EQ(ValGlob(root.path(), "fineweb10B"), root.path() + "/fineweb10B/fineweb_val_*.bin");
  EXPECT_EQ(TrainGlob(root.path(), "debian-text"), root.path() + "/debian-text/train_*.bin");
  EXPECT_TRUE(ListDatasets(root.path() + "/missing").empty());
}

TEST(DatasetsTest, IncompleteOrCorruptDatasetsAreNotListedAndSayWhy) {
  TempDir root;
  MakeDataset(root.path(), "good");
  fs::create_directories(root.path() + "/no-manifest");
  ablate::testing::WriteFile(root.path() + "/no-manifest/train_000001.bin", "x");
  fs::remove(MakeDataset(root.path(), "missing-shard") + "/train_000002.bin");
  fs::resize_file(MakeDataset(root.path(), "short-shard") + "/train_000001.bin", 1100);
  std::string bad_magic = MakeDataset(root.path(), "bad-magic") + "/val_000000.bin";
  {
    std::fstream f(bad_magic, std::ios::in | std::ios::out | std::ios::binary);
    f.write("\x07\x00\x00\x00", 4);
  }
  std::string extra = MakeDataset(root.path(), "unlisted-shard");
  fs::copy_file(extra + "/train_000001.bin", extra + "/train_000009.bin");
  ablate::testing::WriteFile(MakeDataset(root.path(), "bad-json") + "/manifest.json", "{");

  std::vector<std::string> logged;
  EXPECT_EQ(ListDatasets(root.path(), [&](std::string_view l) { logged.emplace_back(l); }),
            std::vector<std::string>{"good"});
  EXPECT_EQ(logged.size(), 6u);
  EXPECT_NE(ProblemOf(root.path(), "no-manifest").find("no manifest.json"), std::string::npos);
  EXPECT_EQ(ProblemOf(root.path(), "missing-shard"), "train_000002.bin: missing");
  EXPECT_EQ(ProblemOf(root.path(), "short-shard"),
            "train_000001.bin: 1100 bytes, manifest.json says 1224");
  EXPECT_NE(ProblemOf(root.path(), "bad-magic").find("wrong magic 7"), std::string::npos)
      << ProblemOf(root.path(), "bad-magic");
  EXPECT_NE(ProblemOf(root.path(), "unlisted-shard").find("train_000009.bin: matches"),
            std::string::npos);
  EXPECT_NE(ProblemOf(root.path(), "bad-json").find("not valid JSON"), std::string::npos);
  EXPECT_NE(logged[0].find("dataset bad-json in " + root.path() + " is not advertised"),
            std::string::npos)
      << logged[0];
}

// Manifests written by `ablate-data encode` before the format field existed still count.
TEST(DatasetsTest, ManifestWithoutFormatUsesTheDefaultPatterns) {
  TempDir root;
  std::string dir = MakeDataset(root.path(), "old", {"train_", "val_", 1});
  ablate::testing::WriteFile(dir + "/manifest.json", R"({"tokenizer": "bytes", "shards": [
    {"name": "train_000001.bin", "split": "train", "tokens": 100, "documents": 3, "bytes": 1224},
    {"name": "val_000000.bin", "split": "val", "tokens": 50, "documents": 1, "bytes": 1124}]})");
  EXPECT_EQ(ProblemOf(root.path(), "old"), "");
}

TEST(DatasetManifestTest, ParseRejectsInconsistentManifestsNamingTheField) {
  auto problem = [](const char* text) {
    Result<DatasetManifest> m = ParseManifest(nlohmann::json::parse(text));
    return m.ok() ? std::string("ok") : m.error().message;
  };
  const char* val = R"({"name": "val_0.bin", "split": "val", "tokens": 1, "bytes": 1026})";
  EXPECT_EQ(problem((std::string(R"({"shards": [)") + val + "]}").c_str()),
            "shards: no train shard");
  EXPECT_EQ(problem(R"({"shards": [{"name": "../t.bin", "split": "train", "tokens": 1,
                                    "bytes": 1026}]})"),
            "shards[0].name: '../t.bin' is not a plain file name");
  EXPECT_EQ(problem(R"({"shards": [{"name": "train_1.bin", "split": "train", "tokens": 2,
                                    "bytes": 1026}]})"),
            "shards[0]: train_1.bin has 2 tokens, so 1028 bytes, not 1026");
  EXPECT_EQ(problem(R"({"train_pattern": "fw_train_*.bin", "shards": [{"name": "train_1.bin",
                        "split": "train", "tokens": 1, "bytes": 1026}]})"),
            "shards[0]: train_1.bin does not match train_pattern 'fw_train_*.bin'");
  EXPECT_EQ(problem(R"({"format": 2, "shards": []})"),
            "format: 2 is not a format this build reads (1)");
  EXPECT_EQ(problem(R"({"shards": [{"name": "train_1.bin", "split": "test", "tokens": 1,
                                    "bytes": 1026}]})"),
            "shards[0].split: 'test' (expected train or val)");
}

TEST(DatasetManifestTest, ChecksumsAreComparedOnlyWhenAsked) {
  TempDir root;
  std::string dir = MakeDataset(root.path(), "d");
  std::string shard = dir + "/train_000001.bin";
  {
    std::fstream f(shard, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1100);
    f.write("\xff\xff", 2);
  }
  Result<DatasetManifest> m = ReadManifest(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(VerifyDataset(dir, *m, VerifyDepth::kHeaders).ok());
  Status s = VerifyDataset(dir, *m, VerifyDepth::kChecksums);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("train_000001.bin: SHA-256 ", 0), 0u) << s.message();
  EXPECT_EQ(s.error().key, "train_000001.bin");
}

}  // namespace
}  // namespace ablate::worker
