// Checkpoint write and load at the r20 full-scale shape on the CPU (no training step needed):
// size, time to write (stream + fsync + rename) and to load (map + parse + copy), each next to a
// baseline in the same run: one plain write() + fsync of as many bytes from one buffer, and one
// read() of the file, both from a cold page cache (the file's pages dropped first). Also the cost
// of a checkpoint in steps of the record's 8×H100 step (129.81 ms, r20's log) and as a share of
// a 10-minute checkpoint interval.
//   checkpoint_bench [--dir DIR] [--repeats N]
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "trainer/config/presets.h"
#include "trainer/model/model_config.h"
#include "trainer/model/param_layout.h"
#include "trainer/weights/checkpoint.h"

namespace ablate {
namespace {

using Clock = std::chrono::steady_clock;
constexpr double kRecordStepMs = 129.81;   // r20 Sub3Min, 8×H100 (record-presets.md)
constexpr double kIntervalMs = 10 * 60e3;  // checkpoint_every: 10m

double Ms(Clock::time_point a) {
  return std::chrono::duration<double, std::milli>(Clock::now() - a).count();
}

void Fill(std::vector<float>& v, float scale) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * float(int64_t(i % 9973) - 4986);
}

// One write() of `bytes` bytes from a buffer, then fsync: the disk's own rate.
double RawWriteMs(const std::string& path, const std::vector<char>& buf) {
  auto t0 = Clock::now();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t w = ::write(fd, buf.data() + done, std::min(buf.size() - done, size_t(1) << 30));
    if (w <= 0) break;
    done += size_t(w);
  }
  ::fsync(fd);
  ::close(fd);
  return Ms(t0);
}

// Drops this file's pages from the page cache (its own pages only), so that each load below
// reads from the disk, as a new worker reading a shared checkpoint would.
void DropFromCache(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

double RawReadMs(const std::string& path, std::vector<char>& buf) {
  auto t0 = Clock::now();
  int fd = ::open(path.c_str(), O_RDONLY);
  size_t done = 0;
  while (done < buf.size()) {
    ssize_t r = ::read(fd, buf.data() + done, std::min(buf.size() - done, size_t(1) << 30));
    if (r <= 0) break;
    done += size_t(r);
  }
  ::close(fd);
  return Ms(t0);
}

int Run(const std::string& dir, int repeats) {
  ModelConfig m = *ModelConfig::FromCanonical(*PresetConfig("r20-sub3min", Scale::kFull));
  ParamLayout layout(m);
  Checkpoint c;
  c.params.resize(size_t(layout.total()));
  int64_t adam = 0, muon = 0;
  for (const ParamInfo& p : layout.params())
    (p.group == ParamGroup::kMuon ? muon : adam) += p.numel;
  c.optim.adam_m.resize(size_t(adam));
  c.optim.adam_v.resize(size_t(adam));
  c.optim.muon_momentum.resize(size_t(muon));
  Fill(c.params, 1e-4f);
  Fill(c.optim.adam_m, 1e-6f);
  Fill(c.optim.adam_v, 1e-9f);
  Fill(c.optim.muon_momentum, 1e-5f);
  c.meta = {700, "bench", 0, 3, 12345, true, 60000.0, 3.5, std::nullopt, std::nullopt, 625};
  std::string ckpt_dir = dir + "/ablate_checkpoint_bench";
  std::filesystem::remove_all(ckpt_dir);
  std::printf("r20-sub3min full: %lld params, Adam state %lld x2, Muon momentum %lld\n",
              static_cast<long long>(layout.total()), static_cast<long long>(adam),
              static_cast<long long>(muon));
  for (int r = 0; r < repeats; ++r) {
    c.meta.steps_done = 700 + r;
    auto t0 = Clock::now();
    Result<std::string> path = WriteCheckpoint(ckpt_dir, c, layout);
    double write_ms = Ms(t0);
    if (!path.ok()) return std::fprintf(stderr, "%s\n", path.error().message.c_str()), 1;
    size_t bytes = std::filesystem::file_size(*path);
    std::vector<char> buf(bytes, 1);
    double raw_write_ms = RawWriteMs(ckpt_dir + "/raw.bin", buf);
    std::vector<std::string> skipped;
    DropFromCache(*path);
    t0 = Clock::now();
    auto loaded = LoadNewestCheckpoint(ckpt_dir, layout, "bench", skipped);
    double load_ms = Ms(t0);
    if (!loaded.ok() || !loaded->has_value()) return std::fprintf(stderr, "load failed\n"), 1;
    DropFromCache(*path);
    double raw_read_ms = RawReadMs(*path, buf);
    std::filesystem::remove(ckpt_dir + "/raw.bin");
    std::printf(
        "repeat %d: %.2f GB; write %.0f ms (%.2fx a raw write+fsync of the same bytes, %.0f ms); "
        "load %.0f ms (%.2fx a raw read, %.0f ms)\n",
        r, double(bytes) / 1e9, write_ms, write_ms / raw_write_ms, raw_write_ms, load_ms,
        load_ms / raw_read_ms, raw_read_ms);
    std::printf(
        "  per checkpoint: %.1f record steps (129.81 ms on 8xH100); every 10 min: %.3f%% of "
        "the interval\n",
        write_ms / kRecordStepMs, 100 * write_ms / kIntervalMs);
  }
  std::filesystem::remove_all(ckpt_dir);
  return 0;
}

}  // namespace
}  // namespace ablate

int main(int argc, char** argv) {
  std::string dir = std::filesystem::temp_directory_path().string();
  int repeats = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--dir") == 0) dir = argv[i + 1];
    if (std::strcmp(argv[i], "--repeats") == 0) repeats = std::atoi(argv[i + 1]);
  }
  return ablate::Run(dir, repeats);
}
