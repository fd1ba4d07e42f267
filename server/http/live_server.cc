// LiveServer: live pages on one epoll thread, polled by a WatchScheduler; see live_server.h.
//
// A page is always held by exactly one side, recorded in its state under its lock:
//   kPolling   its Wake runs on the scheduler's pool (the only code that touches its LiveStream)
//   kParked    the scheduler holds it until the feed moves, a tick passes, or it is cancelled
//   kFlushing  the loop writes its output; once written the loop parks it again (or closes it)
//   kDone      the loop closes it
// The loop closes a page only in kFlushing or kDone, so no Wake can run on a closed page; the
// loop's lists hold shared pointers, so a page queued twice for the loop is never a dangling one.
#include "server/http/live_server.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "server/http/http_auth.h"
#include "server/http/json_reply.h"
#include "server/http/live_request.h"
#include "server/http/live_stream.h"
#include "server/store/absl_compat.h"

namespace ablate {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr size_t kMaxRequest = 8192 + 64 * 1024;  // what the gate lets through (connection_gate.h)
constexpr std::string_view kEnd = "0\r\n\r\n";    // the end of a chunked body

// One chunk of a chunked body ("" for no bytes: an empty chunk would end the body).
std::string Chunk(std::string_view bytes) {
  if (bytes.empty()) return "";
  return absl::StrCat(absl::Hex(bytes.size()), "\r\n", ToAbsl(bytes), "\r\n");
}

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 409:
      return "Conflict";
    case 429:
      return "Too Many Requests";
    case 503:
      return "Service Unavailable";
    default:
      return "Internal Server Error";
  }
}

}  // namespace

class LiveServer::Page : public WatchScheduler::Stream,
                         public std::enable_shared_from_this<LiveServer::Page> {
 public:
  enum class State { kPolling, kParked, kFlushing, kDone };

  Page(LiveServer* server, uint64_t id, int fd, std::function<void()> closed, LiveScope scope)
      : server_(server),
        id_(id),
        fd_(fd),
        closed_(std::move(closed)),
        stream_(server->hub_, std::move(scope), server->options_.clock) {}

  void Wake(uint64_t version) override;
  bool Cancelled() const override { return gone_.load() || server_->stopping_.load(); }

  // The loop found the output written: parks the page, or says to close it (true).
  bool Written() ABSL_LOCKS_EXCLUDED(mu_);

  LiveServer* const server_;
  const uint64_t id_;
  const int fd_;
  const std::function<void()> closed_;
  std::atomic<bool> gone_{false};  // the client went away (set by the loop)

  // The loop's own: whether the fd is in the epoll set, and whether it waits for EPOLLOUT.
  bool registered_ = true;
  bool want_out_ = false;

  absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kPolling;
  std::string out_ ABSL_GUARDED_BY(mu_);         // to write (kFlushing)
  size_t sent_ ABSL_GUARDED_BY(mu_) = 0;         // of out_
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;  // close once out_ is written
  SteadyClock::time_point last_write_ ABSL_GUARDED_BY(mu_) = SteadyClock::now();
  SteadyClock::time_point moved_ ABSL_GUARDED_BY(mu_);  // the output last moved (kFlushing)
  // Where to park next (set by Wake, used by whichever side parks).
  uint64_t seen_ ABSL_GUARDED_BY(mu_) = 0;
  SteadyClock::time_point next_poll_ ABSL_GUARDED_BY(mu_);

 private:
  // Whoever holds the page (kPolling: its Wake) uses these.
  LiveStream stream_;
  bool opened_ = false;  // the response head went out
};

void LiveServer::Page::Wake(uint64_t version) {
  const LiveServerOptions& o = server_->options_;
  std::string out;
  bool finish = false;
  if (server_->stopping_.load() && !gone_.load()) {
    if (opened_) out = std::string(kEnd);
    finish = true;
  } else if (!gone_.load()) {
    absl::StatusOr<std::vector<SseMessage>> messages = stream_.Poll();
    std::string events = opened_ ? "" : "retry: 2000\n\n";
    if (messages.ok()) {
      for (const SseMessage& m : *messages) events += FormatSse(m);
    }
    if (!opened_ && !messages.ok()) {
      out = server_->ErrorReply(messages.status(), Refusal());
      finish = true;
    } else if (!messages.ok()) {
      out = absl::StrCat(Chunk(FormatSse({"error", ErrorJson(messages.status())})), ToAbsl(kEnd));
      finish = true;
    } else {
      out = opened_ ? Chunk(events)
                    : absl::StrCat(
                          server_->Head(200, "text/event-stream", "Transfer-Encoding: chunked\r\n"),
                          Chunk(events));
      opened_ = true;
    }
  }
  const SteadyClock::time_point now = SteadyClock::now();
  bool park = false;
  uint64_t seen = 0;
  SteadyClock::time_point next;
  {
    absl::MutexLock lock(&mu_);
    // A page with unread changes (a per-poll cap) is polled again as soon as the interval
    // allows: a `seen` the feed is no longer at says "moved".
    seen_ = stream_.backlog() ? version - 1 : version;
    next_poll_ = now + o.min_interval;
    if (gone_.load() || (finish && out.empty())) {
      state_ = State::kDone;
    } else {
      if (out.empty() && now - last_write_ >= o.keepalive) out = Chunk(": keepalive\n\n");
      if (out.empty()) {
        state_ = State::kParked;
        park = true;
        seen = seen_;
        next = next_poll_;
      } else {
        state_ = State::kFlushing;
        out_ = std::move(out);
        sent_ = 0;
        finishing_ = finish;
        moved_ = now;
      }
    }
    // Queued while still locked: the loop cannot close the page before it is in its queue.
    if (!park) server_->Queue(shared_from_this());
  }
  if (park) server_->scheduler_->Park(this, seen, next);
}

bool LiveServer::Page::Written() {
  uint64_t seen;
  SteadyClock::time_point next;
  {
    absl::MutexLock lock(&mu_);
    out_.clear();
    sent_ = 0;
    last_write_ = SteadyClock::now();
    if (finishing_ || gone_.load()) {
      state_ = State::kDone;
      return true;
    }
    state_ = State::kParked;
    seen = seen_;
    next = next_poll_;
  }
  server_->scheduler_->Park(this, seen, next);
  return false;
}

LiveServer::LiveServer(LiveServerOptions options, LiveHub* hub, ChangeFeed* feed,
                       LoginThrottle* throttle, std::atomic<int>* open_streams)
    : options_(std::move(options)),
      hub_(hub),
      feed_(feed),
      throttle_(throttle),
      open_streams_(open_streams) {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // page ids start at 1
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  WatchScheduler::Options so;
  so.min_interval = options_.min_interval;
  scheduler_ = std::make_unique<WatchScheduler>(feed_, so);
  loop_ = std::thread([this] { Loop(); });
}

LiveServer::~LiveServer() { Stop(); }

int LiveServer::open() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(pages_.size());
}

std::string LiveServer::Head(int status, std::string_view content_type,
                             std::string_view extra) const {
  std::string head = absl::StrCat(
      "HTTP/1.1 ", status, " ", Reason(status), "\r\nContent-Type: ", ToAbsl(content_type),
      "\r\nCache-Control: no-store\r\nX-Ablate-Now-Ms: ", options_.clock->WallMs(), "\r\n");
  for (const auto& [name, value] : options_.headers) {
    absl::StrAppend(&head, name, ": ", value, "\r\n");
  }
  absl::StrAppend(&head, ToAbsl(extra), "Connection: close\r\n\r\n");
  return head;
}

std::string LiveServer::ErrorReply(const absl::Status& status, const Refusal& refusal) const {
  std::string body = ErrorJson(status);
  const int http = refusal.http != 0 ? refusal.http : HttpStatusOf(status.code());
  return absl::StrCat(Head(http, "application/json",
                           absl::StrCat(refusal.headers, "Content-Length: ", body.size(), "\r\n")),
                      body);
}

void LiveServer::Refuse(int fd, const absl::Status& status, const Refusal& refusal) {
  std::string reply = ErrorReply(status, refusal);
  (void)!send(fd, reply.data(), reply.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  close(fd);
}

// What Take answers before a page opens; OK when the page may open with *scope.
absl::Status LiveServer::Admit(int fd, const std::string& address, LiveScope* scope,
                               Refusal* refusal) {
  thread_local std::vector<char> buf(kMaxRequest);
  ssize_t n = recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
  absl::StatusOr<LiveRequest> request =
      ParseLiveRequest(std::string_view(buf.data(), n > 0 ? static_cast<size_t>(n) : 0));
  if (!request.ok()) return request.status();
  const bool carries = CarriesToken(request->authorization, request->cookie);
  if (int64_t wait_ms = carries ? throttle_->WaitMs(address) : 0; wait_ms > 0) {
    refusal->headers = absl::StrCat("Retry-After: ", (wait_ms + 999) / 1000, "\r\n");
    refusal->http = 429;  // Too Many Requests: the code for "slow down", as the API answers
    return TooManyGuesses(address, wait_ms);
  }
  bool ok = RequestAuthorized(request->authorization, request->cookie, options_.client_token);
  if (!ok && carries) throttle_->Failed(address);
  if (!ok) return absl::UnauthenticatedError(ToAbsl(kTokenRequired));
  absl::StatusOr<LiveScope> s = LiveScopeOf(*request);
  if (!s.ok()) return s.status();
  if (open_streams_->load() >= options_.max_streams)
    return TooManyLiveStreams(options_.max_streams);
  *scope = *std::move(s);
  return absl::OkStatus();
}

void LiveServer::Take(int fd, const std::string& address, std::function<void()> closed) {
  LiveScope scope;
  Refusal refusal;
  if (stopping_.load()) {
    close(fd);
    closed();
    return;
  }
  if (absl::Status s = Admit(fd, address, &scope, &refusal); !s.ok()) {
    Refuse(fd, s, refusal);
    closed();
    return;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  open_streams_->fetch_add(1);
  std::shared_ptr<Page> page;
  {
    absl::MutexLock lock(&mu_);
    page = std::make_shared<Page>(this, ++next_id_, fd, std::move(closed), std::move(scope));
    pages_[page->id_] = page;
  }
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = page->id_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
  scheduler_->RunNow(page.get());
}

void LiveServer::Queue(std::shared_ptr<Page> page) {
  {
    absl::MutexLock lock(&mu_);
    queued_.push_back(std::move(page));
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

void LiveServer::Loop() {
  std::vector<epoll_event> events(256);
  SteadyClock::time_point last_scan = SteadyClock::now();
  for (;;) {
    int n = epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 1000);
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == 0) {
        uint64_t count;
        while (read(wake_fd_, &count, sizeof count) > 0) {
        }
        continue;
      }
      std::shared_ptr<Page> page = Find(events[i].data.u64);
      if (page != nullptr) OnSocket(*page, events[i].events);
    }
    std::vector<std::shared_ptr<Page>> queued;
    bool stop;
    {
      absl::MutexLock lock(&mu_);
      queued.swap(queued_);
      stop = stopped_;
    }
    for (const std::shared_ptr<Page>& page : queued) Serve(*page);
    if (stop) return;
    if (SteadyClock::now() - last_scan >= std::chrono::seconds(1)) {
      last_scan = SteadyClock::now();
      DropStalled();
    }
  }
}

std::shared_ptr<LiveServer::Page> LiveServer::Find(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = pages_.find(id);
  return it == pages_.end() ? nullptr : it->second;
}

void LiveServer::OnSocket(Page& page, uint32_t events) {
  bool gone = (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
  if (!gone && (events & EPOLLIN)) {
    char sink[4096];  // a page sends nothing after its request: read and forget
    for (;;) {
      ssize_t got = recv(page.fd_, sink, sizeof sink, MSG_DONTWAIT);
      if (got > 0) continue;
      gone = got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
      break;
    }
  }
  if (gone) return Gone(page);
  if (events & EPOLLOUT) Serve(page);
}

void LiveServer::Serve(Page& page) {
  Page::State state;
  {
    absl::MutexLock lock(&page.mu_);
    state = page.state_;
  }
  if (state == Page::State::kDone) return Close(page);
  if (state == Page::State::kFlushing) Flush(page);
}

void LiveServer::Flush(Page& page) {
  bool failed = false;
  bool written;
  {
    absl::MutexLock lock(&page.mu_);
    while (page.sent_ < page.out_.size()) {
      ssize_t n = send(page.fd_, page.out_.data() + page.sent_, page.out_.size() - page.sent_,
                       MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        page.sent_ += static_cast<size_t>(n);
        page.moved_ = SteadyClock::now();
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        failed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        break;
      }
    }
    written = page.sent_ >= page.out_.size();
  }
  if (failed) return Gone(page);
  WantOut(page, !written);
  if (written && page.Written()) Close(page);
}

void LiveServer::WantOut(Page& page, bool want) {
  if (!page.registered_ || page.want_out_ == want) return;
  page.want_out_ = want;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0u);
  ev.data.u64 = page.id_;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, page.fd_, &ev);
}

void LiveServer::Gone(Page& page) {
  if (page.registered_) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, page.fd_, nullptr);
    page.registered_ = false;
  }
  page.gone_.store(true);
  Page::State state;
  {
    absl::MutexLock lock(&page.mu_);
    state = page.state_;
    if (state == Page::State::kFlushing) page.state_ = Page::State::kDone;
  }
  if (state == Page::State::kFlushing || state == Page::State::kDone) return Close(page);
  // Parked: the scheduler wakes a cancelled page at once; its Wake marks it done and queues
  // it. Polling: its Wake sees gone_ when it ends.
  if (state == Page::State::kParked) scheduler_->Poke();
}

void LiveServer::Close(Page& page) {
  {
    absl::MutexLock lock(&mu_);
    if (pages_.erase(page.id_) == 0) return;  // closed already
  }
  if (page.registered_) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, page.fd_, nullptr);
    page.registered_ = false;
  }
  close(page.fd_);
  open_streams_->fetch_sub(1);
  page.closed_();
}

void LiveServer::DropStalled() {
  std::vector<std::shared_ptr<Page>> pages;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, page] : pages_) pages.push_back(page);
  }
  const SteadyClock::time_point now = SteadyClock::now();
  for (const std::shared_ptr<Page>& shared : pages) {
    Page& page = *shared;
    bool stalled;
    {
      absl::MutexLock lock(&page.mu_);
      stalled = page.state_ == Page::State::kFlushing && now - page.moved_ >= options_.stall_limit;
    }
    if (stalled) Gone(page);
  }
}

void LiveServer::Stop() {
  if (stopping_.exchange(true)) return;
  // Parked pages are Cancelled() now: woken at once, each writes the end of its stream.
  scheduler_->Poke();
  {
    absl::MutexLock lock(&mu_);
    auto drained = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pages_.empty(); };
    mu_.AwaitWithTimeout(absl::Condition(&drained), absl::Seconds(2));
  }
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
  }
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  loop_.join();
  // Wakes still queued run now: with stopping_ set they only queue their page (never park).
  scheduler_.reset();
  std::vector<std::shared_ptr<Page>> left;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, page] : pages_) left.push_back(page);
  }
  for (const std::shared_ptr<Page>& page : left) Close(*page);  // pages that did not read their end
  close(epoll_fd_);
  close(wake_fd_);
}

}  // namespace ablate
