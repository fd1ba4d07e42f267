// Hex coding and files of the NCCL unique id.
#include "trainer/collectives/nccl_id.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace ablate {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view Trim(std::string_view s) {
  const char* ws = " \t\r\n";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace

std::string EncodeNcclId(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (char c : bytes) {
    auto u = static_cast<unsigned char>(c);
    hex += kDigits[u >> 4];
    hex += kDigits[u & 15];
  }
  return hex;
}

Result<std::string> DecodeNcclId(std::string_view text) {
  std::string_view hex = Trim(text);
  if (hex.size() != 2 * kNcclIdBytes) {
    return Error{"an NCCL id is " + std::to_string(2 * kNcclIdBytes) + " hex digits; got " +
                     std::to_string(hex.size()) + " characters",
                 "nccl_id"};
  }
  std::string bytes(kNcclIdBytes, '\0');
  for (size_t i = 0; i < kNcclIdBytes; ++i) {
    int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return Error{"an NCCL id is hex digits only; character " + std::to_string(2 * i) +
                       " is not one",
                   "nccl_id"};
    }
    bytes[i] = static_cast<char>(hi * 16 + lo);
  }
  return bytes;
}

Status WriteNcclIdFile(const std::string& path, std::string_view bytes) {
  if (bytes.size() != kNcclIdBytes) return Error{"an NCCL id is 128 bytes", "nccl_id"};
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << EncodeNcclId(bytes) << "\n";
    out.flush();
    if (!out) return Error{"cannot write the NCCL id to " + tmp, "nccl_id_file"};
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Error{"cannot rename " + tmp + " to " + path + ": " + ec.message(), "nccl_id_file"};
  return {};
}

Result<std::string> ReadNcclIdFile(const std::string& path, std::chrono::milliseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  std::error_code ec;
  while (!std::filesystem::exists(path, ec)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error{"NCCL id file " + path + " does not exist (waited " +
                       std::to_string(wait.count() / 1000) + " s for node rank 0 to write it)",
                   "nccl_id_file"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return Error{"cannot read the NCCL id file " + path, "nccl_id_file"};
  Result<std::string> id = DecodeNcclId(text.str());
  if (!id.ok()) return Error{path + ": " + id.error().message, "nccl_id_file"};
  return id;
}

}  // namespace ablate
