// A real size-limited file system for the full-disk tests: a tmpfs of `mb` MiB mounted on a fresh
// folder (root only, as in CI), unmounted at the end. Where mounting is not allowed, mounted() is
// false and error() says why, for the test's skip message.
#ifndef ABLATE_TESTS_HARDENING_SMALL_DISK_H_
#define ABLATE_TESTS_HARDENING_SMALL_DISK_H_

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/util/subprocess.h"

namespace ablate::testing {

class SmallDisk {
 public:
  explicit SmallDisk(int mb) : path_(dir_.path() + "/disk") {
    std::filesystem::create_directories(path_);
    std::string opts = "size=" + std::to_string(mb) + "m";
    if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, opts.c_str()) != 0) {
      error_ = std::strerror(errno);
    }
  }
  ~SmallDisk() {
    if (error_.empty()) ::umount2(path_.c_str(), MNT_DETACH);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool mounted() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  // Writes a file until the disk is full.
  void Fill(const std::string& name) {
    std::ofstream out(path_ + "/" + name, std::ios::binary);
    std::string chunk(4096, 'x');
    while (out.write(chunk.data(), chunk.size())) out.flush();
  }

 private:
  TempDir dir_;
  std::string path_;
  std::string error_;
};

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_HARDENING_SMALL_DISK_H_
