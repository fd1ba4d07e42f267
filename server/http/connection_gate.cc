// ConnectionGate: one epoll thread that accepts, counts connections per address, and peeks (never
// reads) at what each client sent until its request is whole; the pool then reads it as usual.
#include "server/http/connection_gate.h"

#include <fcntl.h>
#include <netdb.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>
#include <vector>

namespace ablate {
namespace {

constexpr size_t kMaxHead = 8192;  // httplib's CPPHTTPLIB_HEADER_MAX_LENGTH
constexpr int kTickMs = 200;       // deadlines are checked at least this often

std::string PeerAddress(const sockaddr_storage& addr, socklen_t len) {
  char host[NI_MAXHOST] = {};
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return "unknown";
  }
  return host;
}

bool StartsWithNoCase(std::string_view s, std::string_view lower_prefix) {
  if (s.size() < lower_prefix.size()) return false;
  for (size_t i = 0; i < lower_prefix.size(); ++i) {
    char c = s[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != lower_prefix[i]) return false;
  }
  return true;
}

// The value of a Content-Length line of `head`, nullopt when there is none or it is malformed.
std::optional<size_t> ContentLength(std::string_view head) {
  size_t pos = 0;
  while (pos < head.size()) {
    size_t end = head.find('\n', pos);
    std::string_view line = head.substr(pos, end == std::string_view::npos ? end : end - pos);
    pos = end == std::string_view::npos ? head.size() : end + 1;
    if (!StartsWithNoCase(line, "content-length:")) continue;
    std::string_view v = line.substr(15);
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) {
      v.remove_suffix(1);
    }
    size_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
    return n;
  }
  return std::nullopt;
}

void Refuse(int fd) {
  static constexpr std::string_view kBody = "too many connections from this address\n";
  std::string reply =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
      "Retry-After: 1\r\nContent-Length: " +
      std::to_string(kBody.size()) + "\r\n\r\n" + std::string(kBody);
  (void)!send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  close(fd);
}

}  // namespace

bool RequestComplete(std::string_view bytes, size_t max_body_wait) {
  size_t blank = bytes.find("\n\r\n");
  size_t head_end = blank == std::string_view::npos ? blank : blank + 3;
  if (size_t lf = bytes.find("\n\n"); lf != std::string_view::npos && lf + 2 < head_end) {
    head_end = lf + 2;
  }
  if (head_end == std::string_view::npos) return bytes.size() > kMaxHead;
  std::optional<size_t> body = ContentLength(bytes.substr(0, head_end));
  if (!body || *body > max_body_wait) return true;
  return bytes.size() >= head_end + *body;
}

ConnectionGate::ConnectionGate(ConnectionGateOptions options, Serve serve, Enqueue enqueue,
                               Divert divert)
    : options_(options),
      serve_(std::move(serve)),
      enqueue_(std::move(enqueue)),
      divert_(std::move(divert)) {}

ConnectionGate::~ConnectionGate() { Stop(); }

void ConnectionGate::Start(int listen_fd) {
  listen_fd_ = listen_fd;
  fcntl(listen_fd_, F_SETFL, fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  for (int fd : {listen_fd_, wake_fd_}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  thread_ = std::thread([this] { Loop(); });
}

void ConnectionGate::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    for (const auto& [fd, address] : serving_) shutdown(fd, SHUT_RDWR);
  }
  if (!thread_.joinable()) return;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  thread_.join();
  for (int fd : {listen_fd_, epoll_fd_, wake_fd_}) close(fd);
}

void ConnectionGate::Loop() {
  std::vector<epoll_event> events(256);
  for (;;) {
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), kTickMs);
    for (int i = 0; i < n; ++i) {
      int fd = events[i].data.fd;
      if (fd == wake_fd_) {
        while (!waiting_.empty()) Drop(waiting_.begin()->first);
        return;
      }
      if (fd == listen_fd_) {
        AcceptAll();
      } else {
        Poke(fd);
      }
    }
    ExpireWaiting();
  }
}

void ConnectionGate::AcceptAll() {
  for (;;) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: all taken; EMFILE and the like: tried again next event
    if (waiting_.size() >= options_.max_waiting) {
      close(fd);
      continue;
    }
    std::string address = PeerAddress(addr, len);
    if (!TakeSlot(address)) {
      if (options_.opaque) {
        close(fd);
      } else {
        Refuse(fd);
      }
      continue;
    }
    waiting_[fd] = {address, std::chrono::steady_clock::now() + options_.request_deadline};
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;  // edge: woken by new bytes, not by old ones
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
}

void ConnectionGate::Poke(int fd) {
  if (!waiting_.count(fd)) return;
  thread_local std::vector<char> buf;
  buf.resize(kMaxHead + options_.max_body_wait + 4);
  ssize_t n = recv(fd, buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    Drop(fd);  // gone before asking anything
    return;
  }
  if (n < 0) return;
  std::string_view bytes(buf.data(), static_cast<size_t>(n));
  if (options_.opaque) return HandOver(fd, Unwait(fd));
  if (static_cast<size_t>(n) == buf.size() || RequestComplete(bytes, options_.max_body_wait)) {
    std::string address = Unwait(fd);
    if (divert_ && divert_(fd, bytes, address, [this, address] { FreeSlot(address); })) return;
    HandOver(fd, std::move(address));
  }
}

std::string ConnectionGate::Unwait(int fd) {
  auto it = waiting_.find(fd);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  std::string address = std::move(it->second.address);
  waiting_.erase(it);
  return address;
}

void ConnectionGate::ExpireWaiting() {
  const auto now = std::chrono::steady_clock::now();
  std::vector<int> late;
  for (const auto& [fd, w] : waiting_) {
    if (w.deadline <= now) late.push_back(fd);
  }
  for (int fd : late) Drop(fd);
}

void ConnectionGate::Drop(int fd) {
  auto it = waiting_.find(fd);
  if (it == waiting_.end()) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  FreeSlot(it->second.address);
  waiting_.erase(it);
}

void ConnectionGate::HandOver(int fd, std::string address) {
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  {
    absl::MutexLock lock(&mu_);
    if (copy >= 0 && !stopped_) {
      serving_[copy] = address;
      enqueue_([this, fd, copy] {
        serve_(fd);  // closes fd
        Finished(copy);
      });
      return;
    }
  }
  if (copy >= 0) close(copy);
  close(fd);
  FreeSlot(address);
}

void ConnectionGate::Finished(int copy) {
  absl::MutexLock lock(&mu_);
  auto it = serving_.find(copy);
  if (it == serving_.end()) return;
  close(copy);
  if (auto a = per_address_.find(it->second); a != per_address_.end() && --a->second <= 0) {
    per_address_.erase(a);
  }
  serving_.erase(it);
}

bool ConnectionGate::TakeSlot(const std::string& address) {
  absl::MutexLock lock(&mu_);
  int& n = per_address_[address];
  if (n >= options_.max_per_address) return false;
  ++n;
  return true;
}

void ConnectionGate::FreeSlot(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = per_address_.find(address);
  if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
}

}  // namespace ablate
