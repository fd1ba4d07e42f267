// Progress text for fetches. Rates count only the bytes of this run (a resumed file's earlier
// bytes do not inflate them).
#include "trainer/data/fetch_progress.h"

#include <cmath>

namespace ablate {
namespace {

constexpr double kBarRedrawS = 0.1;
constexpr int kBarWidth = 24;

std::string Fixed1(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

}  // namespace

std::string FormatBytes(int64_t bytes) {
  static const char* const kUnits[] = {"kB", "MB", "GB", "TB"};
  if (bytes < 1000) return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes);
  int unit = -1;
  while (v >= 1000 && unit < 3) {
    v /= 1000;
    ++unit;
  }
  return Fixed1(v) + " " + kUnits[unit];
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long long s = std::llround(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lld:%02lld", s / 60, s % 60);
  }
  return buf;
}

FetchProgress::FetchProgress(std::FILE* out, Style style, std::function<double()> now_s,
                             double line_interval_s)
    : out_(out), style_(style), now_s_(std::move(now_s)), line_interval_s_(line_interval_s) {}

void FetchProgress::BeginShard(int index, int count, const std::string& name) {
  index_ = index;
  count_ = count;
  name_ = name;
  start_s_ = now_s_();
  last_draw_s_ = start_s_;  // lines: the first one after an interval
  first_done_ = -1;
  done_ = 0;
  total_ = -1;
}

std::string FetchProgress::Status() const {
  std::string s = "[" + std::to_string(index_ + 1) + "/" + std::to_string(count_) + "] " + name_ +
                  " " + FormatBytes(done_);
  if (total_ > 0) {
    s += "/" + FormatBytes(total_) + " " + std::to_string(done_ * 100 / total_) + "%";
  }
  double elapsed = now_s_() - start_s_;
  double rate = elapsed > 0 ? double(done_ - std::max<int64_t>(first_done_, 0)) / elapsed : 0;
  s += " " + FormatBytes(static_cast<int64_t>(rate)) + "/s";
  if (total_ > 0) s += " ETA " + (rate > 0 ? FormatDuration(double(total_ - done_) / rate) : "?");
  return s;
}

void FetchProgress::Update(int64_t done, int64_t total) {
  if (first_done_ < 0 || done < first_done_) first_done_ = done;
  done_ = done;
  total_ = total;
  double now = now_s_();
  double interval = style_ == Style::kBar ? kBarRedrawS : line_interval_s_;
  if (now - last_draw_s_ < interval) return;
  last_draw_s_ = now;
  if (style_ == Style::kLines) {
    std::fprintf(out_, "ablate-data: %s\n", Status().c_str());
    return;
  }
  int filled = total > 0 ? static_cast<int>(kBarWidth * done / total) : 0;
  std::string bar = "[" + std::string(filled, '#') + std::string(kBarWidth - filled, '.') + "] ";
  std::fprintf(out_, "\r\033[K%s%s", bar.c_str(), Status().c_str());
  std::fflush(out_);
  bar_drawn_ = true;
}

void FetchProgress::EndShard(const FetchedShard& f) {
  ClearBar();
  std::string head = "[" + std::to_string(index_ + 1) + "/" + std::to_string(count_) + "] " +
                     f.entry.name + ": ";
  if (!f.downloaded) {
    std::fprintf(out_, "ablate-data: %salready in place (%s)\n", head.c_str(),
                 FormatBytes(f.entry.bytes).c_str());
  } else {
    double rate = f.seconds > 0 ? double(f.received_bytes) / f.seconds : 0;
    std::fprintf(out_, "ablate-data: %s%s in %s s (%s/s), %lld tokens\n", head.c_str(),
                 FormatBytes(f.entry.bytes).c_str(), Fixed1(f.seconds).c_str(),
                 FormatBytes(static_cast<int64_t>(rate)).c_str(),
                 static_cast<long long>(f.entry.tokens));
  }
  std::fflush(out_);
}

void FetchProgress::Note(const std::string& line) {
  ClearBar();
  std::fprintf(out_, "ablate-data: %s\n", line.c_str());
  std::fflush(out_);
}

void FetchProgress::ClearBar() {
  if (!bar_drawn_) return;
  std::fprintf(out_, "\r\033[K");
  bar_drawn_ = false;
}

}  // namespace ablate
