// Table printing and value formatting for the CLI.
#include "cli/table.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include "common/printable_text.h"

namespace ablate {
namespace {

// Display width of UTF-8 text: counts code points, not bytes (enough for ±, →, µ).
size_t Width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

void Table::AddRow(std::vector<std::string> row) {
  for (std::string& cell : row) cell = TerminalSafe(cell);
  rows_.push_back(std::move(row));
}

void Table::Print(std::ostream& out) const {
  std::vector<size_t> width(header_.size(), 0);
  auto widen = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], Width(row[i]));
    }
  };
  widen(header_);
  for (const auto& r : rows_) widen(r);
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - Width(row[i]) + 2, ' ');
    }
    out << line << "\n";
  };
  print(header_);
  for (const auto& r : rows_) print(r);
}

std::string FormatDouble(double v, int precision) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string FormatDurationMs(double ms) {
  char buf[64];
  double s = ms / 1000.0;
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, (int(s) % 3600) / 60);
  }
  return buf;
}

std::string FormatAgeMs(int64_t age_ms) {
  if (age_ms < 0) return "never";
  return FormatDurationMs(double(age_ms)) + " ago";
}

std::string FormatTimestampMs(int64_t ms) {
  if (ms <= 0) return "-";
  std::time_t t = ms / 1000;
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

}  // namespace ablate
