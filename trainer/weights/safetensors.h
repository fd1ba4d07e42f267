// The safetensors file format (Hugging Face's; what `safetensors.torch.save_file` writes): an
// 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype", "shape", "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}},
// then the tensors' bytes (row-major, little-endian), offsets relative to the end of the header.
// Parsing takes untrusted bytes and never reads outside them; every error names the tensor.
#ifndef ABLATE_TRAINER_WEIGHTS_SAFETENSORS_H_
#define ABLATE_TRAINER_WEIGHTS_SAFETENSORS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/config/result.h"

namespace ablate {

enum class TensorDtype { kF32, kBF16, kF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool, kOther };

std::string_view TensorDtypeName(TensorDtype dtype);  // "F32", "BF16", ...
int64_t TensorDtypeBytes(TensorDtype dtype);          // 0 for kOther

struct TensorEntry {
  std::string name;
  TensorDtype dtype = TensorDtype::kOther;
  std::string dtype_name;      // as the file spells it
  std::vector<int64_t> shape;  // () for a scalar
  int64_t begin = 0, end = 0;  // byte offsets into the data section
  int64_t numel() const;
};

// A parsed file: its entries (sorted by name) and a view of its data section. The view points
// into the bytes given to ParseSafetensors, which must outlive it.
struct SafetensorsView {
  std::vector<TensorEntry> tensors;
  std::map<std::string, std::string> metadata;
  std::string_view data;

  const TensorEntry* Find(std::string_view name) const;
  std::string_view Bytes(const TensorEntry& t) const {
    return data.substr(size_t(t.begin), size_t(t.end - t.begin));
  }
};

// Validates `bytes` as a whole safetensors file: header length within the file, JSON object,
// each entry's dtype, shape and offsets (within the data, size = numel × dtype size, no two
// tensors overlapping), metadata strings. Errors: "truncated: ...", "tensor 'x': ...".
Result<SafetensorsView> ParseSafetensors(std::string_view bytes);

// Reads a whole file into memory. Errors name the path.
Result<std::string> ReadFileBytes(const std::string& path);

// A file mapped read-only into memory (checkpoints are gigabytes: no copy). Movable.
class MappedFile {
 public:
  static Result<MappedFile> Open(const std::string& path);
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;
  MappedFile(const MappedFile&) = delete;
  ~MappedFile();
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  MappedFile(void* data, size_t size) : data_(data), size_(size) {}
  void* data_ = nullptr;
  size_t size_ = 0;
};

// One tensor to write: `size` raw little-endian bytes (numel × dtype size) at `data`, which
// must stay valid until written; `keep` may own them.
struct TensorToWrite {
  std::string name;
  TensorDtype dtype = TensorDtype::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  int64_t size = 0;
  std::shared_ptr<const std::string> keep;
};

// A tensor of the bytes `owned` (kept alive by the result).
TensorToWrite OwnedTensor(std::string name, TensorDtype dtype, std::vector<int64_t> shape,
                          std::string owned);

// The file's bytes, tensors in the order given (the header is padded to a multiple of 8).
std::string SerializeSafetensors(const std::vector<TensorToWrite>& tensors,
                                 const std::map<std::string, std::string>& metadata);

// Writes the file to path atomically, streaming each tensor from its own memory: a temporary
// file in the same directory, fsynced, then renamed over path, so a reader never sees a partial
// file and a crash leaves either the old file or the new one.
Status WriteSafetensorsFile(const std::string& path, const std::vector<TensorToWrite>& tensors,
                            const std::map<std::string, std::string>& metadata);

// Writes `contents` to path atomically (as above).
Status WriteFileAtomically(const std::string& path, std::string_view contents);

}  // namespace ablate

#endif  // ABLATE_TRAINER_WEIGHTS_SAFETENSORS_H_
