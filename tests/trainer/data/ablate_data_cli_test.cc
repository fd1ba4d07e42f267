// `ablate-data encode` and `inspect` run as real child processes on a small generated text, plus
// the document-splitting rules they rely on.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/trainer/data/temp_dir.h"
#include "trainer/data/corpus_encoder.h"
#include "trainer/data/shard_reader.h"

#ifndef ABLATE_DATA_BIN
#error "ABLATE_DATA_BIN must name the ablate-data binary"
#endif

namespace ablate {
namespace {

using ::ablate::testing::TempDir;
using ::testing::HasSubstr;
using J = nlohmann::json;

struct ToolRun {
  int code = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `s` in single quotes for the shell (test paths hold no quotes).
std::string Quote(const std::string& s) {
  std::string q(1, '\'');
  q.append(s);
  q.push_back('\'');
  return q;
}

// Runs ablate-data with `args` (already shell-quoted) and captures its exit code and output.
ToolRun RunTool(const TempDir& dir, const std::string& args) {
  std::string cmd = Quote(ABLATE_DATA_BIN) + " " + args + " >" + Quote(dir.File("stdout")) +
                    " 2>" + Quote(dir.File("stderr"));
  int status = std::system(cmd.c_str());
  ToolRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = Slurp(dir.File("stdout"));
  r.err = Slurp(dir.File("stderr"));
  return r;
}

TEST(SplitDocumentsTest, FortunePercentLines) {
  std::vector<std::string> d = SplitDocuments("one\ntwo\n%\n\nthree\n%\n%\nfour", "");
  EXPECT_EQ(d, (std::vector<std::string>{"one\ntwo\n", "\nthree\n", "four"}));
}

TEST(SplitDocumentsTest, BlankLineParagraphs) {
  std::vector<std::string> d = SplitDocuments("a\nb\n\n  \n\nc\r\n\r\nd\n", "");
  EXPECT_EQ(d, (std::vector<std::string>{"a\nb\n", "c\r\n", "d\n"}));
}

TEST(SplitDocumentsTest, CustomSeparator) {
  std::vector<std::string> d = SplitDocuments("a\n\nb\n---\nc\n", "---");
  EXPECT_EQ(d, (std::vector<std::string>{"a\n\nb\n", "c\n"}));
}

TEST(EncodeDocumentTest, BosThenBytes) {
  EXPECT_EQ(EncodeDocument("A\xff"), (std::vector<uint16_t>{256, 65, 255}));
}

// 20 fortune documents of 12 tokens each ("fortune NN\n" plus BOS) and a paragraph file.
std::string MakeCorpus(const TempDir& dir) {
  std::ofstream f(dir.File("f.txt"));
  for (int i = 0; i < 20; ++i) f << "fortune " << (i < 10 ? "0" : "") << i << "\n%\n";
  std::ofstream p(dir.File("p.txt"));
  p << "first paragraph\n\nsecond\n";
  return Quote(dir.File("f.txt")) + " " + Quote(dir.File("p.txt"));
}

TEST(AblateDataCliTest, EncodeThenInspect) {
  TempDir dir;
  std::string inputs = MakeCorpus(dir);
  std::string out = dir.File("shards");
  ToolRun enc = RunTool(dir, "encode " + inputs + " --out " + Quote(out) +
                                 " --val-fraction 0.25 --shard-tokens 100");
  ASSERT_EQ(enc.code, 0) << enc.err;
  J m = J::parse(Slurp(out + "/manifest.json"));
  // 22 documents; the last llround(0.25 · 22) = 6 (4 fortunes, 2 paragraphs) are val.
  EXPECT_EQ(m["documents"]["train"], 16);
  EXPECT_EQ(m["documents"]["val"], 6);
  EXPECT_EQ(m["bos_token"], 256);
  int64_t train_tokens = m["tokens"]["train"];
  EXPECT_EQ(train_tokens, 16 * 12);
  EXPECT_EQ(m["shards"][0]["name"], "train_000000.bin");
  EXPECT_EQ(m["shards"][1]["name"], "train_000001.bin");
  EXPECT_EQ(m["shards"][2]["name"], "val_000000.bin");
  EXPECT_EQ(m["tokens"]["val"], 4 * 12 + 17 + 8);
  Result<ShardHeader> h = ReadShardHeader(out + "/train_000001.bin");
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->num_tokens, train_tokens - 100);

  ToolRun insp = RunTool(dir, "inspect " + Quote(out + "/val_000000.bin") + " --json");
  ASSERT_EQ(insp.code, 0) << insp.err;
  J s = J::parse(insp.out);
  EXPECT_EQ(s["documents"], 6);
  EXPECT_EQ(s["bos_token"], 256);  // auto: a byte-level shard
  EXPECT_EQ(s["tokens"], m["tokens"]["val"]);
  EXPECT_GT(s["unigram_entropy_nats"].get<double>(), 1.0);
  ASSERT_EQ(s["top"].size(), 10u);
  EXPECT_GE(s["top"][0]["count"], s["top"][1]["count"]);
  ToolRun text = RunTool(dir, "inspect " + Quote(out + "/train_000000.bin") + " --top 3");
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("magic 20240520, version 1, 100 tokens"));
  EXPECT_THAT(text.out, HasSubstr("nats/token"));
}

TEST(AblateDataCliTest, ExitCodes) {
  TempDir dir;
  EXPECT_EQ(RunTool(dir, "").code, 2);
  EXPECT_EQ(RunTool(dir, "encode --out x").code, 2);
  EXPECT_EQ(RunTool(dir, "inspect a.bin --bogus").code, 2);
  ToolRun missing =
      RunTool(dir, "encode " + Quote(dir.File("none.txt")) + " --out " + Quote(dir.File("o")));
  EXPECT_EQ(missing.code, 3);
  EXPECT_THAT(missing.err, HasSubstr(dir.File("none.txt")));
  testing::WriteBytes(dir.File("bad.bin"), testing::RawShard(kShardMagic, 2, 0, {}));
  ToolRun bad = RunTool(dir, "inspect " + Quote(dir.File("bad.bin")));
  EXPECT_EQ(bad.code, 3);
  EXPECT_THAT(bad.err, HasSubstr(dir.File("bad.bin") + ": byte 4: wrong version 2"));
}

}  // namespace
}  // namespace ablate
