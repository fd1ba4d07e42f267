// CSV for notebooks (compare, records and export): RFC 4180 quoting, numbers in their shortest
// form that reads back to the same double, empty cells for unknown values.
#ifndef ABLATE_CLI_CSV_H_
#define ABLATE_CLI_CSV_H_

#include <string>
#include <string_view>
#include <vector>

namespace ablate {

// `text` as one cell: quoted (with "" for ") when it holds a comma, quote or line break.
std::string CsvText(std::string_view text);
// Shortest decimal that parses back to exactly `v` ("0.1", "179520", "1e-10").
std::string CsvNumber(double v);
// CsvNumber(v) when `has`, else an empty cell.
std::string CsvNumber(bool has, double v);
// Cells (already formatted) joined by commas, with a trailing newline.
std::string CsvLine(const std::vector<std::string>& cells);

}  // namespace ablate

#endif  // ABLATE_CLI_CSV_H_
