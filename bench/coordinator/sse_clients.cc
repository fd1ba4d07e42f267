// SseClients: an epoll loop over many event-stream connections, with just enough HTTP/1.1
// (status line, headers, chunked body) and SSE ("event:"/"data:" lines, blank line ends a
// message) for the coordinator's live routes.
#include "bench/coordinator/sse_clients.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace ablate::bench {

struct SseClients::Conn {
  int fd = -1;
  bool headers_done = false;
  std::string head;     // response headers until "\r\n\r\n"
  std::string chunked;  // undecoded body bytes
  std::string sse;      // decoded body bytes, up to the end of the last whole message
};

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool SendAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += size_t(n);
  }
  return true;
}

// The integer after `key` in `s`, or -1.
int64_t IntAfter(const std::string& s, const char* key) {
  size_t at = s.find(key);
  if (at == std::string::npos) return -1;
  return std::strtoll(s.c_str() + at + std::strlen(key), nullptr, 10);
}

// The last number of the JSON array after `key` ("\"step\":[1,2,3]" -> 3), or -1.
int64_t LastOfArray(const std::string& s, const char* key) {
  size_t at = s.find(key);
  if (at == std::string::npos) return -1;
  size_t close = s.find(']', at);
  if (close == std::string::npos) return -1;
  size_t begin = s.find_last_of("[,", close);
  if (begin == std::string::npos || begin < at) return -1;
  return std::strtoll(s.c_str() + begin + 1, nullptr, 10);
}

}  // namespace

SseClients::SseClients(int port, const SendTimes* times) : port_(port), times_(times) {}

SseClients::~SseClients() { Stop(); }

bool SseClients::Open(const std::vector<std::string>& paths) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.u64 = UINT64_MAX;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake);
  for (size_t i = 0; i < paths.size(); ++i) {
    auto c = std::make_unique<Conn>();
    c->fd = Connect(port_);
    std::string req = "GET " + paths[i] +
                      " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n";
    if (c->fd < 0 || !SendAll(c->fd, req)) {
      std::cerr << "sse client " << i << ": cannot connect or send: " << std::strerror(errno)
                << "\n";
      return false;
    }
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, c->fd, &ev);
    conns_.push_back(std::move(c));
    SseClientStats s;
    s.path = paths[i];
    absl::MutexLock lock(&mu_);
    stats_.push_back(std::move(s));
  }
  thread_ = std::thread([this] { Loop(); });
  return true;
}

bool SseClients::WaitReady(std::chrono::milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    {
      absl::MutexLock lock(&mu_);
      bool all = true;
      for (const SseClientStats& s : stats_) all = all && (s.ready || s.ended);
      if (all) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void SseClients::Stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof one);
  thread_.join();
  for (auto& c : conns_) {
    if (c->fd >= 0) ::close(c->fd);
    c->fd = -1;
  }
  ::close(wake_fd_);
  ::close(epoll_fd_);
}

void SseClients::Loop() {
  std::vector<epoll_event> events(256);
  std::vector<char> buf(1 << 16);
  while (!stop_) {
    int n = ::epoll_wait(epoll_fd_, events.data(), int(events.size()), 200);
    int64_t now = NowNs();
    for (int k = 0; k < n; ++k) {
      uint64_t i = events[size_t(k)].data.u64;
      if (i == UINT64_MAX) continue;  // Stop()
      Conn& c = *conns_[i];
      ssize_t r = ::recv(c.fd, buf.data(), buf.size(), 0);
      if (r < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (r <= 0) {
        ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c.fd, nullptr);
        absl::MutexLock lock(&mu_);
        stats_[i].ended = true;
        continue;
      }
      OnBytes(i, buf.data(), size_t(r), now);
    }
  }
}

void SseClients::OnBytes(size_t i, const char* data, size_t n, int64_t now_ns) {
  Conn& c = *conns_[i];
  {
    absl::MutexLock lock(&mu_);
    stats_[i].bytes += int64_t(n);
  }
  c.chunked.append(data, n);
  if (!c.headers_done) {
    size_t end = c.chunked.find("\r\n\r\n");
    if (end == std::string::npos) return;
    c.head = c.chunked.substr(0, end);
    c.chunked.erase(0, end + 4);
    c.headers_done = true;
    absl::MutexLock lock(&mu_);
    stats_[i].status = std::atoi(c.head.c_str() + c.head.find(' ') + 1);
  }
  // Chunks: "<hex size>\r\n<bytes>\r\n".
  while (true) {
    size_t line = c.chunked.find("\r\n");
    if (line == std::string::npos) break;
    size_t size = std::strtoul(c.chunked.c_str(), nullptr, 16);
    if (c.chunked.size() < line + 2 + size + 2) break;
    c.sse.append(c.chunked, line + 2, size);
    c.chunked.erase(0, line + 2 + size + 2);
  }
  size_t start = 0;
  while (true) {
    size_t end = c.sse.find("\n\n", start);
    if (end == std::string::npos) break;
    std::string event, payload;
    size_t at = start;
    while (at < end) {
      size_t nl = c.sse.find('\n', at);
      if (nl == std::string::npos || nl > end) nl = end;
      std::string_view l(c.sse.data() + at, nl - at);
      if (l.starts_with("event: ")) event = l.substr(7);
      if (l.starts_with("data: ")) payload = l.substr(6);
      at = nl + 1;
    }
    if (!event.empty()) OnMessage(i, event, payload, now_ns);
    start = end + 2;
  }
  c.sse.erase(0, start);
}

void SseClients::OnMessage(size_t i, const std::string& event, const std::string& data,
                           int64_t now_ns) {
  absl::MutexLock lock(&mu_);
  SseClientStats& s = stats_[i];
  ++s.messages;
  if (event == "ready") s.ready = true;
  if (event != "points" || times_ == nullptr) return;
  int64_t run = IntAfter(data, "\"run_id\":");
  int64_t step = LastOfArray(data, "\"step\":[");
  auto it = times_->index_of_run.find(run);
  if (it == times_->index_of_run.end() || step < 0) return;
  int64_t& last = s.last_step[run];
  last = std::max(last, step);
  int64_t sent = times_->GetNs(it->second, step);
  if (sent > 0) s.lag_ms.push_back(float(double(now_ns - sent) / 1e6));
}

}  // namespace ablate::bench
