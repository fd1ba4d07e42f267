// Append-only per-attempt logs with CRC-framed records; see outbox.h for the format.
#include "worker/outbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "worker/disk_space.h"

namespace ablate::worker {
namespace {

constexpr char kMessage = 'M';
constexpr char kAck = 'A';
constexpr const char* kSuffix = ".outbox";
constexpr uint32_t kMaxRecord = 64u << 20;

// errno as a Status (disk_space.h: a full disk is told apart from other failures).
absl::Status PosixError(const std::string& what, const std::string& path) {
  return FileError(what + " " + path, errno);
}

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(p[i])) << (8 * i);
  return v;
}

std::string AckBody(int64_t seq) {
  std::string body(1, kAck);
  for (int i = 0; i < 8; ++i) body.push_back(char((uint64_t(seq) >> (8 * i)) & 0xff));
  return body;
}

int64_t AckSeq(const std::string& body) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(uint8_t(body[1 + i])) << (8 * i);
  return int64_t(v);
}

absl::StatusOr<std::string> ReadAll(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return PosixError("open", path);
  std::string data;
  std::array<char, 1 << 16> buf;
  ssize_t n;
  while ((n = ::read(fd, buf.data(), buf.size())) > 0) data.append(buf.data(), size_t(n));
  int saved = errno;
  ::close(fd);
  errno = saved;
  if (n < 0) return PosixError("read", path);
  return data;
}

// Truncates the file back to `size` (where a failed append began) and returns `error`.
absl::Status CutOff(int fd, off_t size, absl::Status error) {
  int saved = errno;
  if (::ftruncate(fd, size) != 0) {
    error = absl::Status(error.code(), std::string(error.message()) + "; truncating it back: " +
                                           std::strerror(errno));
  }
  errno = saved;
  return error;
}

absl::Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return PosixError("open", dir);
  int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? absl::OkStatus() : PosixError("fsync", dir);
}

}  // namespace

uint32_t Crc32(const std::string& bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xFFFFFFFFu;
  for (char ch : bytes) crc = table[(crc ^ uint8_t(ch)) & 0xff] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

absl::StatusOr<std::unique_ptr<Outbox>> Outbox::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError("create " + dir + ": " + ec.message());
  std::unique_ptr<Outbox> box(new Outbox(dir));
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return PosixError("opendir", dir);
  std::vector<int64_t> ids;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    size_t at = name.rfind(kSuffix);
    if (at == std::string::npos || at + std::strlen(kSuffix) != name.size() || at == 0) continue;
    char* end = nullptr;
    long long id = std::strtoll(name.c_str(), &end, 10);
    if (end == name.c_str() + at) ids.push_back(id);
  }
  ::closedir(d);
  absl::MutexLock lock(&box->mu_);
  for (int64_t id : ids) {
    if (absl::Status s = box->Load(id); !s.ok()) return s;
  }
  return box;
}

Outbox::~Outbox() {
  absl::MutexLock lock(&mu_);
  for (auto& [id, log] : logs_) ::close(log.fd);
}

std::string Outbox::PathOf(int64_t attempt_id) const {
  return dir_ + "/" + std::to_string(attempt_id) + kSuffix;
}

// Replays one file; the first record that is short or fails its CRC ends it and is cut off.
absl::Status Outbox::Load(int64_t attempt_id) {
  std::string path = PathOf(attempt_id);
  absl::StatusOr<std::string> data = ReadAll(path);
  if (!data.ok()) return data.status();
  AttemptLog log;
  size_t off = 0;
  while (off + 8 <= data->size()) {
    uint32_t len = GetU32(data->data() + off), crc = GetU32(data->data() + off + 4);
    if (len == 0 || len > kMaxRecord || off + 8 + len > data->size()) break;
    std::string body = data->substr(off + 8, len);
    if (Crc32(body) != crc) break;
    if (body[0] == kAck && body.size() == 9) {
      int64_t seq = AckSeq(body);
      log.pending.erase(log.pending.begin(), log.pending.upper_bound(seq));
    } else if (body[0] == kMessage) {
      v1::WorkerMessage m;
      if (!m.ParseFromString(body.substr(1))) break;
      if (m.has_metrics()) log.last_batch_seq = m.metrics().seq();
      if (m.has_run_finished()) log.finished = true;
      int64_t seq = m.has_metrics() ? m.metrics().seq() : log.last_batch_seq + 1;
      log.pending[seq] = std::move(m);
    } else {
      break;
    }
    off += 8 + len;
  }
  log.fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (log.fd < 0) return PosixError("open", path);
  if (off != data->size() && ::ftruncate(log.fd, off_t(off)) != 0) {
    return PosixError("truncate", path);
  }
  logs_[attempt_id] = std::move(log);
  return absl::OkStatus();
}

absl::StatusOr<Outbox::AttemptLog*> Outbox::LogFor(int64_t attempt_id) {
  auto it = logs_.find(attempt_id);
  if (it != logs_.end()) return &it->second;
  std::string path = PathOf(attempt_id);
  AttemptLog log;
  log.fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log.fd < 0) return PosixError("create", path);
  if (absl::Status s = SyncDir(dir_); !s.ok()) {
    ::close(log.fd);
    return s;
  }
  return &(logs_[attempt_id] = std::move(log));
}

absl::Status Outbox::AppendRecord(AttemptLog& log, const std::string& body, bool sync) {
  std::string record;
  record.reserve(body.size() + 8);
  PutU32(record, uint32_t(body.size()));
  PutU32(record, Crc32(body));
  record += body;
  // A record that does not fit (a full disk) is cut off again: left torn, it would end the file
  // for Load, and the records appended after it once space returns would be lost with it.
  const off_t start = ::lseek(log.fd, 0, SEEK_END);
  if (start < 0) return PosixError("seek", dir_);
  size_t done = 0;
  while (done < record.size()) {
    ssize_t n = ::write(log.fd, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return CutOff(log.fd, start, PosixError("write", dir_));
    done += size_t(n);
  }
  if (sync && ::fdatasync(log.fd) != 0) {
    return CutOff(log.fd, start, PosixError("fdatasync", dir_));
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::WorkerMessage> Outbox::AppendBatch(v1::MetricBatch batch) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<AttemptLog*> log = LogFor(batch.attempt_id());
  if (!log.ok()) return log.status();
  if ((*log)->finished) {
    return absl::FailedPreconditionError("attempt " + std::to_string(batch.attempt_id()) +
                                         " already finished");
  }
  batch.set_seq((*log)->last_batch_seq + 1);
  v1::WorkerMessage m;
  *m.mutable_metrics() = std::move(batch);
  if (absl::Status s = AppendRecord(**log, kMessage + m.SerializeAsString(), true); !s.ok()) {
    return s;
  }
  (*log)->last_batch_seq = m.metrics().seq();
  (*log)->pending[m.metrics().seq()] = m;
  return m;
}

absl::StatusOr<v1::WorkerMessage> Outbox::AppendFinished(const v1::RunFinished& finished) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<AttemptLog*> log = LogFor(finished.attempt_id());
  if (!log.ok()) return log.status();
  if ((*log)->finished) {
    return absl::FailedPreconditionError("attempt " + std::to_string(finished.attempt_id()) +
                                         " already finished");
  }
  v1::WorkerMessage m;
  *m.mutable_run_finished() = finished;
  // The coordinator commits the result only after every batch up to this one.
  m.mutable_run_finished()->set_last_batch_seq((*log)->last_batch_seq);
  if (absl::Status s = AppendRecord(**log, kMessage + m.SerializeAsString(), true); !s.ok()) {
    return s;
  }
  (*log)->finished = true;
  (*log)->pending[(*log)->last_batch_seq + 1] = m;
  return m;
}

absl::Status Outbox::Ack(int64_t attempt_id, int64_t seq) {
  absl::MutexLock lock(&mu_);
  auto it = logs_.find(attempt_id);
  if (it == logs_.end()) return absl::OkStatus();
  AttemptLog& log = it->second;
  auto acked = log.pending.upper_bound(seq);
  if (acked == log.pending.begin()) return absl::OkStatus();  // nothing new (a repeated Ack)
  log.pending.erase(log.pending.begin(), acked);
  if (log.finished && log.pending.empty()) return Remove(attempt_id);
  // Not synced: losing an ack record only causes a resend, which the coordinator ignores.
  return AppendRecord(log, AckBody(seq), false);
}

absl::Status Outbox::Drop(int64_t attempt_id) {
  absl::MutexLock lock(&mu_);
  if (logs_.count(attempt_id) == 0) return absl::OkStatus();
  return Remove(attempt_id);
}

absl::Status Outbox::Remove(int64_t attempt_id) {
  ::close(logs_[attempt_id].fd);
  logs_.erase(attempt_id);
  std::string path = PathOf(attempt_id);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return PosixError("unlink", path);
  return absl::OkStatus();
}

std::vector<OutboxEntry> Outbox::PendingAfter(int64_t attempt_id, int64_t after_seq) const {
  absl::MutexLock lock(&mu_);
  std::vector<OutboxEntry> out;
  auto it = logs_.find(attempt_id);
  if (it == logs_.end()) return out;
  for (auto p = it->second.pending.upper_bound(after_seq); p != it->second.pending.end(); ++p) {
    out.push_back({p->first, p->second});
  }
  return out;
}

std::vector<int64_t> Outbox::Attempts() const {
  absl::MutexLock lock(&mu_);
  std::vector<int64_t> ids;
  for (const auto& [id, log] : logs_) ids.push_back(id);
  return ids;
}

}  // namespace ablate::worker
