// One page's side of a shared live scope; see live_stream.h and live_hub.h.
#include "server/http/live_stream.h"

#include "absl/strings/str_cat.h"

namespace ablate {

absl::Status TooManyLiveStreams(int max) {
  return absl::UnavailableError(
      absl::StrCat("too many live streams open (", max, "); close some dashboard tabs"));
}

LiveStream::LiveStream(LiveHub* hub, LiveScope scope, const Clock* clock)
    : hub_(hub),
      clock_(clock),
      scope_(std::move(scope)),
      view_{scope_.kind, scope_.kind == LiveScope::Kind::kRun ? scope_.id : 0, scope_.series} {}

LiveStream::~LiveStream() {
  if (joined_) shared_->Leave(view_, cursor_);
}

absl::StatusOr<std::vector<SseMessage>> LiveStream::Poll() {
  if (joined_) return shared_->Take(view_, &cursor_);
  if (shared_ == nullptr) {
    absl::StatusOr<std::shared_ptr<SharedScope>> found = hub_->Find(scope_);
    if (!found.ok()) return found.status();
    shared_ = *std::move(found);
  }
  absl::StatusOr<std::vector<SseMessage>> out = shared_->Join(view_, &cursor_);
  if (!out.ok()) return out.status();
  joined_ = true;
  out->push_back({"ready", absl::StrCat("{\"now_ms\":", clock_->WallMs(), "}")});
  return out;
}

}  // namespace ablate
