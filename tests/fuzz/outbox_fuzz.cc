// Fuzz target: the worker's on-disk outbox records (length, CRC, protobuf) as a restarted worker
// loads them. The input is one attempt's log file in a private temp folder.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "worker/outbox.h"

namespace {

const std::string& OutboxDir() {
  static const std::string dir = [] {
    std::string d = "/tmp/ablate-fuzz-outbox.XXXXXX";
    if (mkdtemp(d.data()) == nullptr) std::abort();
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::filesystem::remove_all(OutboxDir());
  std::filesystem::create_directories(OutboxDir());
  {
    // Attempt 7's log (worker/outbox.cc names them <attempt id>.outbox).
    std::ofstream out(OutboxDir() + "/7.outbox", std::ios::binary);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto outbox = ablate::worker::Outbox::Open(OutboxDir());
  if (outbox.ok()) (*outbox)->PendingAfter(7, 0);
  return 0;
}
