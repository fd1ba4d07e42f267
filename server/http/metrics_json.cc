// Columnar JSON for metric curves, written by hand: the dashboard's hottest path (a sweep
// overlay is tens of thousands of numbers), where reflection-based serialisation costs most.
#include "server/http/metrics_json.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "server/store/absl_compat.h"
#include "server/store/downsample.h"

namespace ablate {
namespace {

using SeriesField = std::optional<double> MetricPoint::*;

SeriesField FieldOf(Series s) {
  switch (s) {
    case Series::kTrainLoss:
      return &MetricPoint::train_loss;
    case Series::kValLoss:
      return &MetricPoint::val_loss;
    case Series::kLr:
      return &MetricPoint::lr;
    case Series::kStepMs:
      return &MetricPoint::step_ms;
  }
  return &MetricPoint::train_loss;
}

// Which points go out, and which series values each shows. Without a mask: every point that
// carries a selected series, with all its selected values. With one (DownsampleMinMax's choice,
// bit i = kAllSeries[i] chosen at that point): the points with a bit set, with those values.
class Selection {
 public:
  Selection(std::span<const MetricPoint> points, const SeriesSet& series,
            const std::vector<uint8_t>* mask)
      : points_(points), series_(series), mask_(mask) {
    for (size_t i = 0; i < points.size(); ++i) {
      if (mask ? (*mask)[i] != 0 : series.Carries(points[i])) kept_.push_back(i);
    }
  }

  bool Shows(size_t i, size_t series_index) const {
    return mask_ == nullptr || ((*mask_)[i] >> series_index & 1u);
  }

  // Appends "name":[v,...] over the kept points; `value(p)` is a point's optional value, shown
  // when `series_index` < 0 (an axis) or that series was chosen at the point.
  template <class ValueOf>
  void AppendColumn(std::string_view name, int series_index, ValueOf value,
                    std::string* out) const {
    absl::StrAppend(out, "\"", ToAbsl(name), "\":[");
    bool first = true;
    for (size_t i : kept_) {
      if (!first) out->push_back(',');
      first = false;
      auto v = value(points_[i]);
      if (v.has_value() && (series_index < 0 || Shows(i, series_index))) {
        AppendJsonNumber(*v, out);
      } else {
        out->append("null");
      }
    }
    out->push_back(']');
  }

  void AppendAll(std::string* out) const {
    out->push_back('{');
    AppendColumn(
        "step", -1, [](const MetricPoint& p) { return std::optional<int64_t>(p.step); }, out);
    out->push_back(',');
    AppendColumn(
        "train_time_ms", -1, [](const MetricPoint& p) { return p.train_time_ms; }, out);
    out->push_back(',');
    AppendColumn(
        "tokens", -1, [](const MetricPoint& p) { return p.tokens; }, out);
    for (size_t k = 0; k < kAllSeries.size(); ++k) {
      if (!series_.Has(kAllSeries[k])) continue;
      out->push_back(',');
      SeriesField field = FieldOf(kAllSeries[k]);
      AppendColumn(
          SeriesName(kAllSeries[k]), static_cast<int>(k),
          [field](const MetricPoint& p) { return p.*field; }, out);
    }
    out->push_back('}');
  }

 private:
  std::span<const MetricPoint> points_;
  const SeriesSet& series_;
  const std::vector<uint8_t>* mask_;
  std::vector<size_t> kept_;  // indices of the points that go out
};

}  // namespace

std::string_view SeriesName(Series s) {
  switch (s) {
    case Series::kTrainLoss:
      return "train_loss";
    case Series::kValLoss:
      return "val_loss";
    case Series::kLr:
      return "lr";
    case Series::kStepMs:
      return "step_ms";
  }
  return "?";
}

SeriesSet SeriesSet::All() {
  SeriesSet all;
  for (Series s : kAllSeries) all.Add(s);
  return all;
}

absl::StatusOr<SeriesSet> SeriesSet::Parse(std::string_view text) {
  if (text.empty()) return All();
  SeriesSet set;
  for (absl::string_view piece : absl::StrSplit(ToAbsl(text), ',')) {
    std::string_view name(piece.data(), piece.size());
    bool known = false;
    for (Series s : kAllSeries) {
      if (SeriesName(s) == name) {
        set.Add(s);
        known = true;
      }
    }
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("series: unknown series '", ToAbsl(name),
                       "'; valid: train_loss, val_loss, lr, step_ms (comma-separated)"));
    }
  }
  return set;
}

unsigned SeriesSet::Bits() const {
  unsigned bits = 0;
  for (size_t i = 0; i < on_.size(); ++i) bits |= on_[i] ? 1u << i : 0u;
  return bits;
}

bool SeriesSet::Carries(const MetricPoint& p) const {
  for (Series s : kAllSeries) {
    if (Has(s) && (p.*FieldOf(s)).has_value()) return true;
  }
  return false;
}

void AppendJsonNumber(double v, std::string* out) {
  if (!std::isfinite(v)) {
    out->append("null");
    return;
  }
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, ec == std::errc() ? end : buf);
}

void AppendJsonNumber(int64_t v, std::string* out) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, ec == std::errc() ? end : buf);
}

void AppendPointColumns(std::span<const MetricPoint> points, const SeriesSet& series,
                        std::string* out) {
  Selection(points, series, nullptr).AppendAll(out);
}

void AppendDownsampledColumns(std::span<const MetricPoint> points, int max_points,
                              const SeriesSet& series, std::string* out) {
  if (points.size() <= static_cast<size_t>(max_points)) {
    AppendPointColumns(points, series, out);
    return;
  }
  std::vector<uint8_t> mask(points.size(), 0);
  std::vector<size_t> carriers;
  std::vector<double> values;
  for (size_t k = 0; k < kAllSeries.size(); ++k) {
    if (!series.Has(kAllSeries[k])) continue;
    SeriesField field = FieldOf(kAllSeries[k]);
    carriers.clear();
    values.clear();
    for (size_t i = 0; i < points.size(); ++i) {
      if (!(points[i].*field).has_value()) continue;
      carriers.push_back(i);
      values.push_back(*(points[i].*field));
    }
    for (size_t kept : MinMaxIndices(values, max_points)) mask[carriers[kept]] |= 1u << k;
  }
  Selection(points, series, &mask).AppendAll(out);
}

void AppendCurveJson(const MetricCurve& curve, const SeriesSet& series, std::string* out) {
  absl::StrAppend(out, "{\"run_id\":", curve.run_id, ",\"attempt_id\":", curve.attempt_id,
                  ",\"total_points\":", curve.total_points, ",\"columns\":");
  AppendPointColumns(curve.points, series, out);
  out->push_back('}');
}

}  // namespace ablate
