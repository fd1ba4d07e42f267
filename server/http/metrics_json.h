// Metric curves as columnar JSON for the dashboard's charts: one array per column (step,
// train_time_ms, tokens and the selected loss/lr/step-time series), which is what a chart library
// plots directly and several times smaller and faster to write than one object per point.
#ifndef ABLATE_SERVER_HTTP_METRICS_JSON_H_
#define ABLATE_SERVER_HTTP_METRICS_JSON_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "server/core/model.h"
#include "server/store/store.h"

namespace ablate {

// The plotted series of a MetricPoint; train_time_ms and tokens are x axes and always included.
enum class Series { kTrainLoss, kValLoss, kLr, kStepMs };
inline constexpr std::array<Series, 4> kAllSeries = {Series::kTrainLoss, Series::kValLoss,
                                                     Series::kLr, Series::kStepMs};
std::string_view SeriesName(Series s);  // "train_loss", "val_loss", "lr", "step_ms"

// Which series a request asked for.
class SeriesSet {
 public:
  static SeriesSet All();
  // Parses a comma-separated list of series names ("train_loss,val_loss"); an empty text means
  // all. INVALID_ARGUMENT naming the unknown entry and the valid names.
  static absl::StatusOr<SeriesSet> Parse(std::string_view text);
  bool Has(Series s) const { return on_[static_cast<size_t>(s)]; }
  void Add(Series s) { on_[static_cast<size_t>(s)] = true; }
  // One bit per series, for use as a key.
  unsigned Bits() const;
  // True when the point carries a value of at least one selected series.
  bool Carries(const MetricPoint& p) const;

 private:
  std::array<bool, kAllSeries.size()> on_{};
};

// Appends `points` as one JSON object: {"step":[..],"train_time_ms":[..],"tokens":[..],
// "<series>":[..] for each selected series}. Points that carry none of the selected series are
// left out; a value a point lacks is null (so are NaN and infinities, which JSON cannot hold).
// Numbers are written in their shortest round-trip form.
void AppendPointColumns(std::span<const MetricPoint> points, const SeriesSet& series,
                        std::string* out);

// As AppendPointColumns over DownsampleMinMax(points, max_points) (downsample.h) restricted to
// the selected series: each selected series keeps the min and max of each of max_points/2
// buckets of the points that carry it, and a point shows only the values chosen at it. Computes
// only the selected series. `points`: every stored point, step order; max_points >= 2.
void AppendDownsampledColumns(std::span<const MetricPoint> points, int max_points,
                              const SeriesSet& series, std::string* out);

// Appends {"run_id":N,"attempt_id":N,"total_points":N,"columns":<AppendPointColumns>}.
// total_points counts the stored points before downsampling.
void AppendCurveJson(const MetricCurve& curve, const SeriesSet& series, std::string* out);

// Appends a JSON number (null when not finite).
void AppendJsonNumber(double v, std::string* out);
void AppendJsonNumber(int64_t v, std::string* out);

}  // namespace ablate

#endif  // ABLATE_SERVER_HTTP_METRICS_JSON_H_
