// The byte-level corpus encoder behind `ablate-data encode`.
#include "trainer/data/corpus_encoder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/text_lines.h"
#include "trainer/data/dataset_manifest.h"
#include "trainer/data/shard_reader.h"
#include "trainer/data/shard_writer.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;

// The line's text without its line ending.
std::string_view LineText(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool IsBlank(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; });
}

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot read input " + path, ""};
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Error{"error while reading input " + path, ""};
  return ss.str();
}

// One split's token stream written as shards `<prefix>_NNNNNN.bin`; returns their manifest rows.
Result<std::vector<ShardEntry>> WriteSplit(const std::vector<uint16_t>& stream,
                                           const std::string& prefix, const EncodeOptions& o) {
  std::vector<ShardEntry> rows;
  for (int64_t start = 0, i = 0; start < static_cast<int64_t>(stream.size()); ++i) {
    int64_t n = std::min<int64_t>(o.shard_tokens, static_cast<int64_t>(stream.size()) - start);
    char name[64];
    std::snprintf(name, sizeof(name), "%s_%06lld.bin", prefix.c_str(), static_cast<long long>(i));
    std::span<const uint16_t> part(stream.data() + start, static_cast<size_t>(n));
    std::string path = (fs::path(o.out_dir) / name).string();
    Status s = WriteShard(path, part);
    if (!s.ok()) return s.error();
    Result<ShardDigest> digest = DigestShard(path);
    if (!digest.ok()) return digest.error();
    rows.push_back({name, prefix, n, kShardHeaderBytes + 2 * n, digest->sha256});
    start += n;
  }
  return rows;
}

// "debian-text" for "data/debian-text", "data/debian-text/" and "." inside it.
std::string DirectoryName(const std::string& dir) {
  return (fs::absolute(dir) / "").lexically_normal().parent_path().filename().string();
}

Status CheckOptions(const EncodeOptions& o) {
  if (o.inputs.empty()) return Error{"no input files", ""};
  if (!(o.val_fraction >= 0 && o.val_fraction < 1)) {
    return Error{"--val-fraction must be in [0, 1), got " + std::to_string(o.val_fraction), ""};
  }
  if (o.shard_tokens < 1 || o.shard_tokens > 2147483647LL) {
    return Error{"--shard-tokens must be in [1, 2^31)", ""};
  }
  return Status();
}

}  // namespace

std::vector<std::string> SplitDocuments(std::string_view text, const std::string& separator) {
  std::vector<std::string_view> lines = LinesWithNewlines(text);
  bool percent = separator.empty() && std::any_of(lines.begin(), lines.end(), [](auto l) {
                   return LineText(l) == "%";
                 });
  auto is_separator = [&](std::string_view line) {
    if (!separator.empty()) return LineText(line) == separator;
    if (percent) return LineText(line) == "%";
    return IsBlank(line);
  };
  std::vector<std::string> docs;
  std::string current;
  auto flush = [&] {
    if (!IsBlank(current)) docs.push_back(current);
    current.clear();
  };
  for (std::string_view line : lines) {
    if (is_separator(line)) {
      flush();
    } else {
      current.append(line);
    }
  }
  flush();
  return docs;
}

std::vector<uint16_t> EncodeDocument(std::string_view doc) {
  std::vector<uint16_t> tokens;
  tokens.reserve(doc.size() + 1);
  tokens.push_back(kByteBosToken);
  for (char c : doc) tokens.push_back(static_cast<unsigned char>(c));
  return tokens;
}

Result<J> EncodeCorpus(const EncodeOptions& o) {
  Status s = CheckOptions(o);
  if (!s.ok()) return s.error();
  std::vector<std::string> docs;
  J inputs = J::array();
  for (const std::string& path : o.inputs) {
    Result<std::string> text = ReadFile(path);
    if (!text.ok()) return text.error();
    std::vector<std::string> d = SplitDocuments(*text, o.doc_separator);
    inputs.push_back({{"path", path}, {"bytes", text->size()}, {"documents", d.size()}});
    for (std::string& doc : d) docs.push_back(std::move(doc));
  }
  const int64_t total = static_cast<int64_t>(docs.size());
  int64_t n_val = std::llround(o.val_fraction * static_cast<double>(total));
  if (o.val_fraction > 0) n_val = std::max<int64_t>(n_val, 1);
  if (total == 0 || n_val >= total) {
    return Error{"the inputs hold " + std::to_string(total) +
                     " documents; need at least one training document" +
                     (n_val > 0 ? " and one validation document" : ""),
                 ""};
  }
  std::vector<uint16_t> train, val;
  for (int64_t i = 0; i < total; ++i) {
    std::vector<uint16_t> t = EncodeDocument(docs[i]);
    std::vector<uint16_t>& dst = i < total - n_val ? train : val;
    dst.insert(dst.end(), t.begin(), t.end());
  }
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) return Error{"cannot create " + o.out_dir + ": " + ec.message(), ""};
  Result<std::vector<ShardEntry>> train_rows = WriteSplit(train, "train", o);
  if (!train_rows.ok()) return train_rows.error();
  Result<std::vector<ShardEntry>> val_rows = WriteSplit(val, "val", o);
  if (!val_rows.ok()) return val_rows.error();
  DatasetManifest m;
  m.shards = *train_rows;
  m.shards.insert(m.shards.end(), val_rows->begin(), val_rows->end());
  m.fields = {{"name", DirectoryName(o.out_dir)},
              {"source", "ablate-data encode"},
              {"tokenizer", "bytes"},
              {"vocab_size", kByteVocabSize},
              {"bos_token", kByteBosToken},
              {"val_fraction", o.val_fraction},
              {"doc_separator", o.doc_separator.empty() ? "auto" : o.doc_separator},
              {"inputs", inputs},
              {"documents", {{"train", total - n_val}, {"val", n_val}}}};
  if (Status w = WriteManifest(o.out_dir, m); !w.ok()) return w.error();
  return ManifestJson(m);
}

}  // namespace ablate
