// A scratch directory for data tests, removed when the test ends.
#ifndef ABLATE_TESTS_TRAINER_DATA_TEMP_DIR_H_
#define ABLATE_TESTS_TRAINER_DATA_TEMP_DIR_H_

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ablate::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ablate_data_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string File(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void WriteBytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<long>(bytes.size()));
}

// Raw shard bytes with any header fields and any tokens (for the bad-shard cases).
inline std::vector<char> RawShard(int32_t magic, int32_t version, int32_t count,
                                  const std::vector<uint16_t>& tokens) {
  std::vector<char> bytes(1024, 0);
  int32_t fields[3] = {magic, version, count};
  std::memcpy(bytes.data(), fields, sizeof(fields));
  // Appended rather than copied into a presized buffer: GCC at -O1 (test code's level) warns
  // about the memcpy at offset 1024 for the empty case it cannot rule out.
  const char* token_bytes = reinterpret_cast<const char*>(tokens.data());
  bytes.insert(bytes.end(), token_bytes, token_bytes + 2 * tokens.size());
  return bytes;
}

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_TRAINER_DATA_TEMP_DIR_H_
