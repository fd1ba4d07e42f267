// What `ablate-data fetch` shows while it works: on a terminal, one bar redrawn in place (shard,
// bytes, rate, ETA); otherwise (a log file, CI) a plain line every few seconds. Both end every
// shard with a summary line.
#ifndef ABLATE_TRAINER_DATA_FETCH_PROGRESS_H_
#define ABLATE_TRAINER_DATA_FETCH_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "trainer/data/shard_fetcher.h"

namespace ablate {

// "0 B", "980 B", "1.5 kB", "200.0 MB", "10.3 GB" (decimal units).
std::string FormatBytes(int64_t bytes);
// "0:07", "12:34", "1:02:03"; "?" for a negative or non-finite time.
std::string FormatDuration(double seconds);

// Not thread-safe; the fetch calls it from one thread.
class FetchProgress {
 public:
  enum class Style { kBar, kLines };
  // `out` (stderr) must outlive this. `now_s` is a clock in seconds. kLines prints at most one
  // progress line per `line_interval_s`.
  FetchProgress(std::FILE* out, Style style, std::function<double()> now_s,
                double line_interval_s = 10.0);

  void BeginShard(int index, int count, const std::string& name);
  void Update(int64_t done, int64_t total);  // total -1 while unknown
  void EndShard(const FetchedShard& shard);
  void Note(const std::string& line);  // a log line that does not garble the bar

  // The progress text for the current shard (without the bar), e.g.
  // "[2/9] fineweb_train_000001.bin 84.0 MB/200.0 MB 42% 95.3 MB/s ETA 0:01".
  std::string Status() const;

 private:
  void ClearBar();

  std::FILE* out_;
  Style style_;
  std::function<double()> now_s_;
  double line_interval_s_;
  int index_ = 0, count_ = 0;
  std::string name_;
  double start_s_ = 0, last_draw_s_ = -1e300;
  int64_t first_done_ = -1, done_ = 0, total_ = -1;
  bool bar_drawn_ = false;
};

}  // namespace ablate

#endif  // ABLATE_TRAINER_DATA_FETCH_PROGRESS_H_
