// safetensors parsing and writing. Parsing checks every offset against the bytes it was given
// before anything is read, so a truncated or hostile file is an error, never a wild read.
#include "trainer/weights/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

namespace ablate {
namespace {

using J = nlohmann::json;

constexpr int64_t kMaxHeaderBytes = 100'000'000;  // the safetensors library's own limit

struct DtypeInfo {
  TensorDtype dtype;
  const char* name;
  int64_t bytes;
};

constexpr DtypeInfo kDtypes[] = {
    {TensorDtype::kF32, "F32", 4},   {TensorDtype::kBF16, "BF16", 2}, {TensorDtype::kF16, "F16", 2},
    {TensorDtype::kF64, "F64", 8},   {TensorDtype::kI64, "I64", 8},   {TensorDtype::kI32, "I32", 4},
    {TensorDtype::kI16, "I16", 2},   {TensorDtype::kI8, "I8", 1},     {TensorDtype::kU8, "U8", 1},
    {TensorDtype::kBool, "BOOL", 1},
};

TensorDtype DtypeFromName(std::string_view name) {
  for (const DtypeInfo& d : kDtypes) {
    if (name == d.name) return d.dtype;
  }
  return TensorDtype::kOther;
}

Error TensorError(const std::string& name, const std::string& what) {
  return Error{"tensor '" + name + "': " + what, name};
}

// A non-negative integer that fits int64 (nlohmann keeps unsigned and signed apart).
bool ReadCount(const J& v, int64_t& out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(INT64_MAX)) return false;
    out = int64_t(u);
    return true;
  }
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    out = v.get<int64_t>();
    return true;
  }
  return false;
}

Result<TensorEntry> ParseEntry(const std::string& name, const J& v, int64_t data_size) {
  if (!v.is_object()) return TensorError(name, "header entry is not an object");
  TensorEntry t;
  t.name = name;
  auto dtype = v.find("dtype");
  auto shape = v.find("shape");
  auto offsets = v.find("data_offsets");
  if (dtype == v.end() || !dtype->is_string()) return TensorError(name, "no dtype string");
  if (shape == v.end() || !shape->is_array()) return TensorError(name, "no shape array");
  if (offsets == v.end() || !offsets->is_array() || offsets->size() != 2) {
    return TensorError(name, "data_offsets is not [begin, end]");
  }
  t.dtype_name = dtype->get<std::string>();
  t.dtype = DtypeFromName(t.dtype_name);
  if (t.dtype == TensorDtype::kOther) return TensorError(name, "unknown dtype " + t.dtype_name);
  int64_t numel = 1;
  for (const J& d : *shape) {
    int64_t n = 0;
    if (!ReadCount(d, n)) return TensorError(name, "shape has a non-integer or negative size");
    if (n > 0 && numel > INT64_MAX / n / 8) return TensorError(name, "shape is too large");
    numel *= n;
    t.shape.push_back(n);
  }
  if (!ReadCount((*offsets)[0], t.begin) || !ReadCount((*offsets)[1], t.end) || t.end < t.begin) {
    return TensorError(name, "data_offsets are not two ordered non-negative integers");
  }
  if (t.end > data_size) {
    return TensorError(name, "truncated: its data ends at byte " + std::to_string(t.end) +
                                 " of a data section of " + std::to_string(data_size));
  }
  if (t.end - t.begin != numel * TensorDtypeBytes(t.dtype)) {
    return TensorError(name, "data_offsets span " + std::to_string(t.end - t.begin) +
                                 " bytes, but shape × dtype needs " +
                                 std::to_string(numel * TensorDtypeBytes(t.dtype)));
  }
  return t;
}

Status CheckNoOverlap(std::vector<TensorEntry> sorted) {
  std::sort(sorted.begin(), sorted.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.begin < b.begin; });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].begin < sorted[i - 1].end && sorted[i].end > sorted[i].begin) {
      return TensorError(sorted[i].name, "its data overlaps tensor '" + sorted[i - 1].name + "'");
    }
  }
  return {};
}

}  // namespace

std::string_view TensorDtypeName(TensorDtype dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

int64_t TensorDtypeBytes(TensorDtype dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.dtype == dtype) return d.bytes;
  }
  return 0;
}

int64_t TensorEntry::numel() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

const TensorEntry* SafetensorsView::Find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const TensorEntry& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

Result<SafetensorsView> ParseSafetensors(std::string_view bytes) {
  if (bytes.size() < 8) {
    return Error{"truncated: " + std::to_string(bytes.size()) + " bytes, not even a header length",
                 ""};
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | uint8_t(bytes[size_t(i)]);
  if (n > uint64_t(kMaxHeaderBytes) || n > bytes.size() - 8) {
    return Error{"truncated: the header claims " + std::to_string(n) + " bytes, the file has " +
                     std::to_string(bytes.size() - 8) + " after the length",
                 ""};
  }
  J header = J::parse(bytes.substr(8, size_t(n)), nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    return Error{"the header is not a JSON object", ""};
  }
  SafetensorsView view;
  view.data = bytes.substr(8 + size_t(n));
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return Error{"__metadata__ is not an object", ""};
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) return Error{"__metadata__ '" + m.key() + "' is not a string", ""};
        view.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    Result<TensorEntry> t = ParseEntry(it.key(), *it, int64_t(view.data.size()));
    if (!t.ok()) return t.error();
    view.tensors.push_back(std::move(t).value());
  }
  std::sort(view.tensors.begin(), view.tensors.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.name < b.name; });
  ABLATE_RETURN_IF_ERROR(CheckNoOverlap(view.tensors));
  return view;
}

Result<std::string> ReadFileBytes(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot open " + path + ": " + std::strerror(errno), ""};
  struct stat st;
  std::string out;
  if (::fstat(fd, &st) == 0) out.resize(size_t(st.st_size));
  size_t done = 0;
  while (done < out.size()) {  // one sequential read: the disk's rate, no page-fault per page
    ssize_t r = ::read(fd, out.data() + done, std::min(out.size() - done, size_t(1) << 30));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    done += size_t(r);
  }
  int err = errno;
  ::close(fd);
  if (done != out.size()) {
    return Error{"cannot read " + path + ": " + std::to_string(done) + " of " +
                     std::to_string(out.size()) + " bytes (" + std::strerror(err) + ")",
                 ""};
  }
  return out;
}

TensorToWrite OwnedTensor(std::string name, TensorDtype dtype, std::vector<int64_t> shape,
                          std::string owned) {
  auto keep = std::make_shared<const std::string>(std::move(owned));
  return {std::move(name), dtype, std::move(shape), keep->data(), int64_t(keep->size()), keep};
}

namespace {

// The 8-byte length and the padded JSON header.
std::string Header(const std::vector<TensorToWrite>& tensors,
                   const std::map<std::string, std::string>& metadata) {
  J header = J::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  int64_t at = 0;
  for (const TensorToWrite& t : tensors) {
    header[t.name] = {{"dtype", std::string(TensorDtypeName(t.dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {at, at + t.size}}};
    at += t.size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // aligned data, as the library pads
  std::string out(8, '\0');
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return out + text;
}

Status WriteAll(int fd, const char* p, size_t left, const std::string& path) {
  while (left > 0) {
    ssize_t w = ::write(fd, p, std::min(left, size_t(1) << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return Error{"cannot write " + path + ": " + std::strerror(errno), ""};
    p += w;
    left -= size_t(w);
  }
  return {};
}

// Writes the pieces to a temporary file beside path, fsyncs it and renames it over path.
template <class WriteFn>
Status WriteAtomically(const std::string& path, WriteFn write_pieces) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{"cannot create " + tmp + ": " + std::strerror(errno), ""};
  Status s = write_pieces(fd, tmp);
  if (s.ok() && ::fsync(fd) != 0)
    s = Error{"cannot flush " + tmp + ": " + std::strerror(errno), ""};
  if (::close(fd) != 0 && s.ok())
    s = Error{"cannot close " + tmp + ": " + std::strerror(errno), ""};
  if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    s = Error{"cannot rename " + tmp + " to " + path + ": " + std::strerror(errno), ""};
  }
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

}  // namespace

std::string SerializeSafetensors(const std::vector<TensorToWrite>& tensors,
                                 const std::map<std::string, std::string>& metadata) {
  std::string out = Header(tensors, metadata);
  for (const TensorToWrite& t : tensors) {
    out.append(static_cast<const char*>(t.data), size_t(t.size));
  }
  return out;
}

Status WriteSafetensorsFile(const std::string& path, const std::vector<TensorToWrite>& tensors,
                            const std::map<std::string, std::string>& metadata) {
  return WriteAtomically(path, [&](int fd, const std::string& tmp) -> Status {
    std::string header = Header(tensors, metadata);
    ABLATE_RETURN_IF_ERROR(WriteAll(fd, header.data(), header.size(), tmp));
    for (const TensorToWrite& t : tensors) {
      ABLATE_RETURN_IF_ERROR(WriteAll(fd, static_cast<const char*>(t.data), size_t(t.size), tmp));
    }
    return {};
  });
}

Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  return WriteAtomically(path, [&](int fd, const std::string& tmp) {
    return WriteAll(fd, contents.data(), contents.size(), tmp);
  });
}

Result<MappedFile> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{"cannot open " + path + ": " + std::strerror(errno), ""};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return Error{"cannot stat " + path + ": " + why, ""};
  }
  size_t size = size_t(st.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      std::string why = std::strerror(errno);
      ::close(fd);
      return Error{"cannot map " + path + ": " + why, ""};
    }
    // Read front to back once: ask for large readahead instead of a fault per page.
    (void)::madvise(data, size, MADV_SEQUENTIAL);
    (void)::madvise(data, size, MADV_WILLNEED);
  }
  ::close(fd);
  return MappedFile(data, size);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace ablate
