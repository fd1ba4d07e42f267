// Snapshot reading, hashing, unpacking and diffing.
#include "common/code_snapshot.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include <openssl/evp.h>

namespace ablate {
namespace {

namespace fs = std::filesystem;

// A line diff compares at most this many line pairs (after the common head and tail are set
// aside, so a small edit of a big file still diffs); beyond it the files are just "different".
constexpr int64_t kMaxDiffCells = int64_t{4} << 20;
constexpr size_t kContext = 3;

bool IsExecutable(const fs::path& p) {
  std::error_code ec;
  fs::perms perms = fs::status(p, ec).permissions();
  return !ec && (perms & fs::perms::owner_exec) != fs::perms::none;
}

absl::Status ReadInto(const fs::path& file, const std::string& name, int64_t* total,
                      Snapshot* out) {
  std::error_code ec;
  uintmax_t size = fs::file_size(file, ec);
  if (ec) return absl::InternalError("cannot read " + file.string() + ": " + ec.message());
  *total += static_cast<int64_t>(size);
  if (*total > kMaxSnapshotBytes) return absl::OkStatus();  // the caller reports the size
  std::ifstream in(file, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in && size > 0) return absl::InternalError("cannot read " + file.string());
  out->push_back({name, bytes.str(), IsExecutable(file)});
  return absl::OkStatus();
}

absl::Status ReadFolder(const fs::path& root, int64_t* total, Snapshot* out) {
  std::error_code ec;
  const std::string base = root.filename().string();
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_directory() && it->path().filename() == "__pycache__") {
      it.disable_recursion_pending();  // bytecode differs between machines and runs
      continue;
    }
    if (!it->is_regular_file()) continue;
    std::string rel = base + "/" + fs::relative(it->path(), root).generic_string();
    if (absl::Status s = ReadInto(it->path(), rel, total, out); !s.ok()) return s;
  }
  if (ec) return absl::InternalError("cannot list " + root.string() + ": " + ec.message());
  return absl::OkStatus();
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  return lines;
}

struct Op {
  char kind;  // ' ', '-', '+'
  int a, b;   // line indices before this op in from / to
  std::string_view line;
};

// Longest common subsequence on the middle part; the common head and tail are kept as is.
// nullopt when the middle is too large to compare.
std::optional<std::vector<Op>> LineOps(const std::vector<std::string_view>& a,
                                       const std::vector<std::string_view>& b) {
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  const size_t n = a.size() - head - tail, m = b.size() - head - tail;
  if (static_cast<int64_t>(n + 1) * static_cast<int64_t>(m + 1) > kMaxDiffCells) return std::nullopt;
  std::vector<uint32_t> lcs((n + 1) * (m + 1), 0);
  auto at = [&](size_t i, size_t j) -> uint32_t& { return lcs[i * (m + 1) + j]; };
  for (size_t i = n; i-- > 0;) {
    for (size_t j = m; j-- > 0;) {
      at(i, j) = a[head + i] == b[head + j] ? at(i + 1, j + 1) + 1
                                            : std::max(at(i + 1, j), at(i, j + 1));
    }
  }
  std::vector<Op> ops;
  int ia = 0, ib = 0;
  auto push = [&](char kind) {
    std::string_view line = kind == '+' ? b[ib] : a[ia];
    ops.push_back({kind, ia, ib, line});
    if (kind != '+') ++ia;
    if (kind != '-') ++ib;
  };
  for (size_t k = 0; k < head; ++k) push(' ');
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[head + i] == b[head + j]) {
      push(' '), ++i, ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      push('-'), ++i;  // removals before additions, as diff -u prints them
    } else {
      push('+'), ++j;
    }
  }
  for (size_t k = 0; k < tail; ++k) push(' ');
  return ops;
}

std::string Hunks(const std::vector<Op>& ops) {
  std::string out;
  size_t k = 0;
  while (true) {
    while (k < ops.size() && ops[k].kind == ' ') ++k;
    if (k == ops.size()) break;
    // One hunk: changes at most 2 * context unchanged lines apart, with context around them.
    size_t last = k;
    for (size_t j = k + 1; j < ops.size() && j - last <= 2 * kContext + 1; ++j) {
      if (ops[j].kind != ' ') last = j;
    }
    size_t begin = k >= kContext ? k - kContext : 0;
    size_t end = std::min(ops.size(), last + kContext + 1);
    int a_count = 0, b_count = 0;
    for (size_t t = begin; t < end; ++t) {
      a_count += ops[t].kind != '+';
      b_count += ops[t].kind != '-';
    }
    int a_start = ops[begin].a + (a_count > 0 ? 1 : 0);
    int b_start = ops[begin].b + (b_count > 0 ? 1 : 0);
    out += "@@ -" + std::to_string(a_start) + "," + std::to_string(a_count) + " +" +
           std::to_string(b_start) + "," + std::to_string(b_count) + " @@\n";
    for (size_t t = begin; t < end; ++t) {
      out += ops[t].kind;
      out += ops[t].line;
      out += '\n';
    }
    k = end;
  }
  return out;
}

// One file's diff; a null side is a file that does not exist on that side.
std::string FileDiff(const SnapshotFile* from, const SnapshotFile* to) {
  std::string header = std::string("--- ") + (from ? "a/" + from->path : "/dev/null") + "\n+++ " +
                       (to ? "b/" + to->path : "/dev/null") + "\n";
  // Views into the files themselves (a ternary with "" would make them views into temporaries).
  const std::string_view from_text = from ? std::string_view(from->content) : std::string_view();
  const std::string_view to_text = to ? std::string_view(to->content) : std::string_view();
  std::optional<std::vector<Op>> ops = LineOps(SplitLines(from_text), SplitLines(to_text));
  if (!ops) return header + "(files differ; too large to compare line by line)\n";
  return header + Hunks(*ops);
}

// A file's place inside its script: the path without its first part (the script's own name),
// so that train_gpt.py and train_gpt_myidea.py compare as one file.
std::string InScript(const std::string& path) {
  size_t slash = path.find('/');
  return slash == std::string::npos ? "" : path.substr(slash + 1);
}

}  // namespace

void SortSnapshot(Snapshot* files) {
  std::sort(files->begin(), files->end(),
            [](const SnapshotFile& x, const SnapshotFile& y) { return x.path < y.path; });
}

int64_t SnapshotBytes(const Snapshot& files) {
  int64_t total = 0;
  for (const SnapshotFile& f : files) total += static_cast<int64_t>(f.content.size());
  return total;
}

// OpenSSL's SHA-256 (SHA-NI where the CPU has it): snapshots are up to 16 MB and hashed on
// every submit and every worker fetch; trainer/config/sha256.h is the portable one for configs.
std::string SnapshotHash(const Snapshot& files) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
  for (const SnapshotFile& f : files) {
    std::string head = f.path;
    head += '\0';
    head += f.executable ? 'x' : '-';
    head += std::to_string(f.content.size());
    head += '\0';
    EVP_DigestUpdate(ctx, head.data(), head.size());
    EVP_DigestUpdate(ctx, f.content.data(), f.content.size());
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx, digest, &size);
  EVP_MD_CTX_free(ctx);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < size; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

absl::Status CheckSnapshotPath(std::string_view path) {
  if (path.empty() || path.front() == '/') {
    return absl::InvalidArgumentError("snapshot path '" + std::string(path) +
                                      "' must be relative");
  }
  std::string_view rest = path;
  while (true) {
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string_view::npos) {
      return absl::InvalidArgumentError("snapshot path '" + std::string(path) +
                                        "' has an empty, '.' or '..' part");
    }
    if (slash == std::string_view::npos) return absl::OkStatus();
    rest = rest.substr(slash + 1);
  }
}

absl::Status CheckSnapshot(const Snapshot& files) {
  if (files.empty()) return absl::InvalidArgumentError("the snapshot holds no file");
  if (int64_t bytes = SnapshotBytes(files); bytes > kMaxSnapshotBytes) {
    return absl::ResourceExhaustedError("the snapshot holds " + std::to_string(bytes) +
                                        " bytes; the limit is " +
                                        std::to_string(kMaxSnapshotBytes) + " (16 MB)");
  }
  for (size_t i = 0; i < files.size(); ++i) {
    if (absl::Status s = CheckSnapshotPath(files[i].path); !s.ok()) return s;
    if (i > 0 && files[i].path <= files[i - 1].path) {
      return absl::InvalidArgumentError("snapshot paths are not sorted and unique at '" +
                                        files[i].path + "'");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Snapshot> ReadSnapshot(const std::string& path) {
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) return absl::NotFoundError("no such file or folder: " + path);
  Snapshot files;
  int64_t total = 0;
  fs::path p = fs::path(path).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();  // "pkg/" -> "pkg"
  absl::Status s;
  if (fs::is_regular_file(st)) {
    s = ReadInto(p, p.filename().string(), &total, &files);
  } else if (fs::is_directory(st)) {
    s = ReadFolder(fs::absolute(p), &total, &files);
  } else {
    return absl::InvalidArgumentError(path + " is neither a file nor a folder");
  }
  if (!s.ok()) return s;
  if (total > kMaxSnapshotBytes) {
    return absl::ResourceExhaustedError(path + " holds " + std::to_string(total) +
                                        " bytes; a snapshot may hold at most " +
                                        std::to_string(kMaxSnapshotBytes) + " (16 MB)");
  }
  if (files.empty()) return absl::InvalidArgumentError("the folder " + path + " holds no file");
  SortSnapshot(&files);
  return files;
}

absl::Status WriteSnapshot(const Snapshot& files, const std::string& dir) {
  for (const SnapshotFile& f : files) {
    if (absl::Status s = CheckSnapshotPath(f.path); !s.ok()) return s;
    fs::path target = fs::path(dir) / f.path;
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) return absl::InternalError("create " + target.parent_path().string() + ": " +
                                       ec.message());
    std::ofstream out(target, std::ios::binary | std::ios::trunc);
    out.write(f.content.data(), static_cast<std::streamsize>(f.content.size()));
    out.close();
    if (!out) return absl::InternalError("cannot write " + target.string());
    if (f.executable) {
      fs::permissions(target, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add,
                      ec);
    }
  }
  return absl::OkStatus();
}

std::optional<std::vector<LineEdit>> DiffLines(const std::vector<std::string_view>& from,
                                               const std::vector<std::string_view>& to) {
  std::optional<std::vector<Op>> ops = LineOps(from, to);
  if (!ops) return std::nullopt;
  std::vector<LineEdit> out;
  out.reserve(ops->size());
  for (const Op& op : *ops) out.push_back({op.kind, op.a, op.b, op.line});
  return out;
}

std::string UnifiedDiff(const Snapshot& from, const Snapshot& to) {
  std::map<std::string, std::pair<const SnapshotFile*, const SnapshotFile*>> files;
  for (const SnapshotFile& f : from) files[InScript(f.path)].first = &f;
  for (const SnapshotFile& f : to) files[InScript(f.path)].second = &f;
  std::string out;
  for (const auto& [path, pair] : files) {
    if (pair.first && pair.second && pair.first->content == pair.second->content) continue;
    out += FileDiff(pair.first, pair.second);
  }
  return out;
}

}  // namespace ablate
