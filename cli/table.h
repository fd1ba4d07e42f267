// A plain-text table for people: columns padded to their widest cell, a header row, no borders.
#ifndef ABLATE_CLI_TABLE_H_
#define ABLATE_CLI_TABLE_H_

#include <ostream>
#include <string>
#include <vector>

namespace ablate {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  // Cells are made TerminalSafe (common/printable_text.h): stored text never reaches the
  // terminal with control characters in it.
  void AddRow(std::vector<std::string> row);
  bool empty() const { return rows_.empty(); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Formatting helpers shared by the commands.
std::string FormatDouble(double v, int precision);
std::string FormatDurationMs(double ms);   // "1.2s", "3m04s", "2h05m"
std::string FormatAgeMs(int64_t age_ms);   // "3s ago", "never" for negative ages
std::string FormatTimestampMs(int64_t ms);  // local "YYYY-MM-DD HH:MM:SS", "-" for 0

}  // namespace ablate

#endif  // ABLATE_CLI_TABLE_H_
