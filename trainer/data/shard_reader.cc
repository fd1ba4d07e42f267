// Shard validation. Files are read with stdio in large chunks; the header is checked before any
// token is read, so a wrong file fails fast and cheaply.
#include "trainer/data/shard_reader.h"

#include <glob.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <sys/stat.h>

namespace ablate {
namespace {

static_assert(std::endian::native == std::endian::little, "shards are little-endian");

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

Error ShardError(const std::string& path, int64_t offset, const std::string& what) {
  return Error{"shard " + path + ": byte " + std::to_string(offset) + ": " + what, ""};
}

Result<File> OpenForRead(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) return Error{"shard " + path + ": cannot open: " + std::strerror(errno), ""};
  return f;
}

Result<int64_t> FileSize(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return Error{"shard " + path + ": cannot stat: " + std::strerror(errno), ""};
  }
  if (!S_ISREG(st.st_mode)) return Error{"shard " + path + ": not a regular file", ""};
  return static_cast<int64_t>(st.st_size);
}

// Reads exactly `bytes` bytes or reports where the file ended.
Status ReadExactly(std::FILE* f, const std::string& path, int64_t offset, void* out,
                   int64_t bytes) {
  size_t got = std::fread(out, 1, static_cast<size_t>(bytes), f);
  if (static_cast<int64_t>(got) != bytes) {
    return ShardError(path, offset + static_cast<int64_t>(got),
                      "unexpected end of file (wanted " + std::to_string(bytes) + " bytes from " +
                          std::to_string(offset) + ")");
  }
  return Status();
}

Status CheckTokens(const std::string& path, const std::vector<uint16_t>& tokens, int64_t first,
                   int64_t vocab_size) {
  if (vocab_size <= 0) return Status();
  auto bad = std::find_if(tokens.begin(), tokens.end(),
                          [vocab_size](uint16_t t) { return t >= vocab_size; });
  if (bad == tokens.end()) return Status();
  int64_t index = first + (bad - tokens.begin());
  return ShardError(path, kShardHeaderBytes + 2 * index,
                    "token " + std::to_string(*bad) + " at index " + std::to_string(index) +
                        " is not below vocab_size " + std::to_string(vocab_size));
}

}  // namespace

Result<ShardHeader> ReadShardHeader(const std::string& path) {
  Result<int64_t> size = FileSize(path);
  if (!size.ok()) return size.error();
  if (*size < kShardHeaderBytes) {
    return ShardError(path, *size,
                      "truncated header: file has " + std::to_string(*size) +
                          " bytes, the header needs " + std::to_string(kShardHeaderBytes));
  }
  Result<File> f = OpenForRead(path);
  if (!f.ok()) return f.error();
  int32_t ints[kShardHeaderInts];
  Status s = ReadExactly(f->get(), path, 0, ints, kShardHeaderBytes);
  if (!s.ok()) return s.error();
  if (ints[0] != kShardMagic) {
    return ShardError(path, 0, "wrong magic " + std::to_string(ints[0]) + " (expected " +
                                   std::to_string(kShardMagic) + ")");
  }
  if (ints[1] != kShardVersion) {
    return ShardError(path, 4, "wrong version " + std::to_string(ints[1]) + " (expected " +
                                   std::to_string(kShardVersion) + ")");
  }
  if (ints[2] < 0) return ShardError(path, 8, "negative token count " + std::to_string(ints[2]));
  ShardHeader h{ints[0], ints[1], ints[2], *size};
  int64_t want = kShardHeaderBytes + 2 * h.num_tokens;
  if (*size != want) {
    return ShardError(path, std::min(*size, want),
                      std::string(*size < want ? "truncated body" : "size mismatch") +
                          ": file has " + std::to_string(*size) +
                          " bytes but the header's token count " + std::to_string(h.num_tokens) +
                          " needs " + std::to_string(want));
  }
  return h;
}

Result<std::vector<uint16_t>> ReadShardRange(const std::string& path, int64_t first, int64_t count,
                                             int64_t vocab_size) {
  Result<ShardHeader> h = ReadShardHeader(path);
  if (!h.ok()) return h.error();
  if (first < 0 || count < 0 || first + count > h->num_tokens) {
    return Error{"shard " + path + ": tokens [" + std::to_string(first) + ", " +
                     std::to_string(first + count) + ") are outside its " +
                     std::to_string(h->num_tokens) + " tokens",
                 ""};
  }
  Result<File> f = OpenForRead(path);
  if (!f.ok()) return f.error();
  int64_t offset = kShardHeaderBytes + 2 * first;
  if (std::fseek(f->get(), offset, SEEK_SET) != 0) {
    return ShardError(path, offset, std::string("cannot seek: ") + std::strerror(errno));
  }
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  Status s = ReadExactly(f->get(), path, offset, tokens.data(), 2 * count);
  if (!s.ok()) return s.error();
  s = CheckTokens(path, tokens, first, vocab_size);
  if (!s.ok()) return s.error();
  return tokens;
}

Result<std::vector<uint16_t>> ReadShardTokens(const std::string& path, int64_t vocab_size) {
  Result<ShardHeader> h = ReadShardHeader(path);
  if (!h.ok()) return h.error();
  return ReadShardRange(path, 0, h->num_tokens, vocab_size);
}

Result<std::vector<std::string>> ExpandShardPattern(const std::string& pattern) {
  glob_t g;
  std::memset(&g, 0, sizeof(g));
  int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> paths;
  if (rc == 0) paths.assign(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  ::globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && paths.empty())) {
    return Error{"no shard matches the pattern '" + pattern + "'", ""};
  }
  if (rc != 0) return Error{"cannot expand the pattern '" + pattern + "' (glob error)", ""};
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace ablate
