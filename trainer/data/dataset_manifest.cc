// manifest.json reading, writing and checking. Size and header checks read 1 KiB per shard;
// checksums map the whole file.
#include "trainer/data/dataset_manifest.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "trainer/data/shard_digest.h"
#include "trainer/data/shard_reader.h"

namespace ablate {
namespace {

namespace fs = std::filesystem;
using J = nlohmann::json;

const char* const kKnownKeys[] = {"format", "train_pattern", "val_pattern", "tokens", "shards"};

bool IsHex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool Matches(const std::string& pattern, const std::string& name) {
  return fnmatch(pattern.c_str(), name.c_str(), FNM_PERIOD) == 0;
}

Result<int64_t> IntField(const J& row, const std::string& where, const char* key) {
  auto it = row.find(key);
  if (it == row.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    return Error{where + "." + key + ": missing or not a non-negative integer", where};
  }
  return it->get<int64_t>();
}

Result<std::string> StringField(const J& row, const std::string& where, const char* key,
                                bool required) {
  auto it = row.find(key);
  if (it == row.end() && !required) return std::string();
  if (it == row.end() || !it->is_string()) return Error{where + "." + key + ": missing or not a string", where};
  return it->get<std::string>();
}

Result<ShardEntry> ParseShard(const J& row, const std::string& where,
                              const DatasetManifest& m) {
  if (!row.is_object()) return Error{where + ": not an object", where};
  ShardEntry e;
  Result<std::string> name = StringField(row, where, "name", true);
  Result<std::string> split = StringField(row, where, "split", true);
  Result<std::string> sha = StringField(row, where, "sha256", false);
  Result<int64_t> tokens = IntField(row, where, "tokens");
  Result<int64_t> bytes = IntField(row, where, "bytes");
  for (const Status& s : {name.status(), split.status(), sha.status(), tokens.status(), bytes.status()}) {
    if (!s.ok()) return s.error();
  }
  e = {*name, *split, *tokens, *bytes, *sha};
  if (e.name.empty() || e.name.find('/') != std::string::npos || e.name[0] == '.') {
    return Error{where + ".name: '" + e.name + "' is not a plain file name", where};
  }
  if (e.split != "train" && e.split != "val") {
    return Error{where + ".split: '" + e.split + "' (expected train or val)", where};
  }
  if (e.bytes != kShardHeaderBytes + 2 * e.tokens) {
    return Error{where + ": " + e.name + " has " + std::to_string(e.tokens) + " tokens, so " +
                     std::to_string(kShardHeaderBytes + 2 * e.tokens) + " bytes, not " +
                     std::to_string(e.bytes), where};
  }
  const std::string& pattern = e.split == "train" ? m.train_pattern : m.val_pattern;
  if (!Matches(pattern, e.name)) {
    return Error{where + ": " + e.name + " does not match " + e.split + "_pattern '" + pattern + "'",
                 where};
  }
  if (!e.sha256.empty() && !IsHex64(e.sha256)) {
    return Error{where + ".sha256: not 64 lowercase hex digits", where};
  }
  return e;
}

Status ParsePatterns(const J& doc, DatasetManifest* m) {
  for (auto [key, out] : {std::pair{"train_pattern", &m->train_pattern},
                          std::pair{"val_pattern", &m->val_pattern}}) {
    auto it = doc.find(key);
    if (it == doc.end()) continue;
    if (!it->is_string() || it->get<std::string>().empty() ||
        it->get<std::string>().find('/') != std::string::npos) {
      return Error{std::string(key) + ": not a file name pattern", key};
    }
    *out = it->get<std::string>();
  }
  return Status();
}

Status ParseShards(const J& doc, DatasetManifest* m) {
  auto it = doc.find("shards");
  if (it == doc.end() || !it->is_array()) return Error{"shards: missing or not a list", "shards"};
  std::set<std::string> seen;
  for (size_t i = 0; i < it->size(); ++i) {
    Result<ShardEntry> e = ParseShard((*it)[i], "shards[" + std::to_string(i) + "]", *m);
    if (!e.ok()) return e.error();
    if (!seen.insert(e->name).second) {
      return Error{"shards: " + e->name + " is listed twice", "shards"};
    }
    m->shards.push_back(*e);
  }
  for (const char* split : {"train", "val"}) {
    bool any = std::any_of(m->shards.begin(), m->shards.end(),
                           [&](const ShardEntry& e) { return e.split == split; });
    if (!any) return Error{std::string("shards: no ") + split + " shard", "shards"};
  }
  return Status();
}

Status CheckShardFile(const std::string& dir, const ShardEntry& e, VerifyDepth depth) {
  std::string path = (fs::path(dir) / e.name).string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return Error{e.name + ": missing", e.name};
  int64_t size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec || size != e.bytes) {
    return Error{e.name + ": " + std::to_string(size) + " bytes, manifest.json says " +
                     std::to_string(e.bytes), e.name};
  }
  Result<ShardHeader> h = ReadShardHeader(path);
  if (!h.ok()) return Error{h.error().message, e.name};
  if (h->num_tokens != e.tokens) {
    return Error{e.name + ": header says " + std::to_string(h->num_tokens) +
                     " tokens, manifest.json says " + std::to_string(e.tokens), e.name};
  }
  if (depth == VerifyDepth::kChecksums && !e.sha256.empty()) {
    Result<ShardDigest> d = DigestShard(path);
    if (!d.ok()) return d.error();
    if (d->sha256 != e.sha256) {
      return Error{e.name + ": SHA-256 " + d->sha256 + ", manifest.json says " + e.sha256, e.name};
    }
  }
  return Status();
}

// Closes a descriptor and unmaps a mapping when the digest is done.
struct Mapping {
  int fd = -1;
  void* data = MAP_FAILED;
  size_t size = 0;
  ~Mapping() {
    if (data != MAP_FAILED) munmap(data, size);
    if (fd >= 0) close(fd);
  }
};

}  // namespace

int64_t DatasetManifest::Tokens(const std::string& split) const {
  int64_t n = 0;
  for (const ShardEntry& e : shards) n += e.split == split ? e.tokens : 0;
  return n;
}

Result<DatasetManifest> ParseManifest(const J& doc) {
  if (!doc.is_object()) return Error{"not a JSON object", ""};
  DatasetManifest m;
  if (auto f = doc.find("format"); f != doc.end() && (!f->is_number_integer() ||
                                                      f->get<int>() > kManifestFormat)) {
    return Error{"format: " + f->dump() + " is not a format this build reads (1)", "format"};
  }
  if (Status s = ParsePatterns(doc, &m); !s.ok()) return s.error();
  if (Status s = ParseShards(doc, &m); !s.ok()) return s.error();
  for (const auto& [key, value] : doc.items()) {
    if (std::find(std::begin(kKnownKeys), std::end(kKnownKeys), key) == std::end(kKnownKeys)) {
      m.fields[key] = value;
    }
  }
  return m;
}

J ManifestJson(const DatasetManifest& m) {
  J doc = m.fields;
  doc["format"] = kManifestFormat;
  doc["train_pattern"] = m.train_pattern;
  doc["val_pattern"] = m.val_pattern;
  doc["tokens"] = {{"train", m.Tokens("train")}, {"val", m.Tokens("val")}};
  J shards = J::array();
  for (const ShardEntry& e : m.shards) {
    J row = {{"name", e.name}, {"split", e.split}, {"tokens", e.tokens}, {"bytes", e.bytes}};
    if (!e.sha256.empty()) row["sha256"] = e.sha256;
    shards.push_back(row);
  }
  doc["shards"] = shards;
  return doc;
}

Result<DatasetManifest> ReadManifest(const std::string& dir) {
  std::string path = (fs::path(dir) / kManifestFile).string();
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot read", ""};
  std::stringstream text;
  text << in.rdbuf();
  J doc = J::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{path + ": not valid JSON", ""};
  Result<DatasetManifest> m = ParseManifest(doc);
  if (!m.ok()) return Error{path + ": " + m.error().message, m.error().key};
  return m;
}

Status WriteManifest(const std::string& dir, const DatasetManifest& manifest) {
  std::string path = (fs::path(dir) / kManifestFile).string();
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << ManifestJson(manifest).dump(2) << "\n";
    out.flush();
    if (!out) return Error{"cannot write " + tmp, ""};
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Error{"cannot rename " + tmp + " to " + path + ": " + why, ""};
  }
  return Status();
}

Status VerifyDataset(const std::string& dir, const DatasetManifest& m, VerifyDepth depth) {
  std::set<std::string> listed;
  for (const ShardEntry& e : m.shards) {
    if (Status s = CheckShardFile(dir, e, depth); !s.ok()) return s;
    listed.insert(e.name);
  }
  for (const std::string& pattern : {m.train_pattern, m.val_pattern}) {
    for (const std::string& name : MatchingFiles(dir, pattern)) {
      if (listed.count(name) == 0) {
        return Error{name + ": matches '" + pattern + "' but manifest.json does not list it "
                     "(an unfinished fetch? run `ablate-data fetch` again)", name};
      }
    }
  }
  return Status();
}

Result<ShardDigest> DigestShard(const std::string& path) {
  Mapping map;
  map.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (map.fd < 0) return Error{"shard " + path + ": cannot open: " + std::strerror(errno), ""};
  struct stat st;
  if (fstat(map.fd, &st) != 0) return Error{"shard " + path + ": cannot stat: " + std::strerror(errno), ""};
  map.size = static_cast<size_t>(st.st_size);
  ShardDigest d;
  if (map.size == 0) {
    d.sha256 = ShardSha256Hex("");
    return d;
  }
  map.data = mmap(nullptr, map.size, PROT_READ, MAP_PRIVATE, map.fd, 0);
  if (map.data == MAP_FAILED) return Error{"shard " + path + ": cannot map: " + std::strerror(errno), ""};
  madvise(map.data, map.size, MADV_SEQUENTIAL);
  const char* bytes = static_cast<const char*>(map.data);
  d.sha256 = ShardSha256Hex(std::string_view(bytes, map.size));
  for (size_t i = kShardHeaderBytes; i + 1 < map.size; i += 2) {
    uint16_t t;
    std::memcpy(&t, bytes + i, 2);
    d.max_token = std::max<int>(d.max_token, t);
  }
  return d;
}

std::vector<std::string> MatchingFiles(const std::string& dir, const std::string& pattern) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (Matches(pattern, name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ablate
