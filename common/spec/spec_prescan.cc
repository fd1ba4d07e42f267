// Size, UTF-8 and nesting scans over raw spec text. The nesting scan is a small state machine
// that follows just enough YAML (indentation, "- " entries, flow brackets, quotes, comments and
// block scalars) to bound the depth yaml-cpp will recurse to; it errs towards counting more.
#include "common/spec/spec_prescan.h"

#include <cstdio>
#include <string>
#include <vector>

namespace ablate {
namespace {

// Length of the UTF-8 sequence starting at text[i], or 0 when it is malformed (truncated,
// overlong, a surrogate or beyond U+10FFFF).
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 ? 2 : 0;
  if (len == 0 || b > 0xF4 || i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  unsigned char b1 = byte(i + 1);
  if (b == 0xE0 && b1 < 0xA0) return 0;  // overlong
  if (b == 0xED && b1 > 0x9F) return 0;  // surrogate
  if (b == 0xF0 && b1 < 0x90) return 0;  // overlong
  if (b == 0xF4 && b1 > 0x8F) return 0;  // beyond U+10FFFF
  return len;
}

bool CheckUtf8(std::string_view text, SpecErrors* errors) {
  SpecPosition at;
  for (size_t i = 0; i < text.size();) {
    size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[i]));
      errors->Add(at, "", std::string("the spec is not valid UTF-8 (byte ") + hex + ")");
      return false;
    }
    if (text[i] == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      at.column += static_cast<int>(len);  // byte columns, as yaml-cpp's marks
    }
    i += len;
  }
  return true;
}

class NestingScanner {
 public:
  explicit NestingScanner(SpecErrors* errors) : errors_(errors) {}

  // False after reporting the first place deeper than kMaxSpecDepth.
  bool ScanLine(std::string_view line, int line_number);

 private:
  bool Report(int line_number, size_t pos);
  size_t BlockStructure(std::string_view line, size_t indent, int line_number, bool* ok);
  bool ScanChars(std::string_view line, size_t pos, int line_number);

  SpecErrors* errors_;
  std::vector<size_t> indents_;    // open block indentation levels
  int block_depth_ = 0;            // depth of the current line's block content
  int flow_base_ = 0;              // block depth where the open flow collection began
  int flow_depth_ = 0;             // open [ and { brackets
  char quote_ = 0;                 // open quote spanning lines, if any
  long block_scalar_indent_ = -1;  // inside a | or > scalar whose key sits at this indent
};

bool NestingScanner::Report(int line_number, size_t pos) {
  errors_->Add(SpecPosition{line_number, static_cast<int>(pos) + 1}, "",
               "nesting deeper than " + std::to_string(kMaxSpecDepth) + " levels");
  return false;
}

bool NestingScanner::ScanLine(std::string_view line, int line_number) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  size_t indent = line.find_first_not_of(' ');
  bool blank = indent == std::string_view::npos || line[indent] == '#';
  if (block_scalar_indent_ >= 0) {
    if (blank || static_cast<long>(indent) > block_scalar_indent_) return true;
    block_scalar_indent_ = -1;
  }
  if (quote_ != 0 || flow_depth_ > 0) return ScanChars(line, 0, line_number);
  if (blank) return true;
  bool ok = true;
  size_t pos = BlockStructure(line, indent, line_number, &ok);
  return ok && ScanChars(line, pos, line_number);
}

// Updates the indentation stack for a block-context line and counts its leading "- " and "? "
// entries, each of which opens one more level. Returns where the line's content starts.
size_t NestingScanner::BlockStructure(std::string_view line, size_t indent, int line_number,
                                      bool* ok) {
  while (!indents_.empty() && indents_.back() > indent) indents_.pop_back();
  if (indents_.empty() || indents_.back() < indent) indents_.push_back(indent);
  block_depth_ = static_cast<int>(indents_.size());
  size_t pos = indent;
  while (pos < line.size() && (line[pos] == '-' || line[pos] == '?') &&
         (pos + 1 == line.size() || line[pos + 1] == ' ')) {
    if (++block_depth_ > kMaxSpecDepth) {
      *ok = Report(line_number, pos);
      return pos;
    }
    pos = line.find_first_not_of(' ', pos + 1);
    if (pos == std::string_view::npos) pos = line.size();
  }
  if (block_depth_ > kMaxSpecDepth) *ok = Report(line_number, indent);
  return pos;
}

bool NestingScanner::ScanChars(std::string_view line, size_t pos, int line_number) {
  char prev = 0;  // last significant character; 0 at the start of content
  for (size_t i = pos; i < line.size(); ++i) {
    char c = line[i];
    if (quote_ == '\'') {
      if (c == '\'' && i + 1 < line.size() && line[i + 1] == '\'') {
        ++i;
      } else if (c == '\'') {
        quote_ = 0;
      }
      prev = 'q';
      continue;
    }
    if (quote_ == '"') {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quote_ = 0;
      }
      prev = 'q';
      continue;
    }
    if (c == ' ' || c == '\t') continue;
    bool opens_node = prev == 0 || prev == ':' || prev == '-' || prev == '?' || prev == '[' ||
                      prev == '{' || prev == ',';
    if (c == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t')) return true;
    if ((c == '\'' || c == '"') && opens_node) {
      quote_ = c;
    } else if ((c == '[' || c == '{') && (flow_depth_ > 0 || opens_node)) {
      if (flow_depth_ == 0) flow_base_ = block_depth_;
      if (flow_base_ + ++flow_depth_ > kMaxSpecDepth) return Report(line_number, i);
      prev = c;
      continue;
    } else if ((c == ']' || c == '}') && flow_depth_ > 0) {
      --flow_depth_;
    } else if ((c == '|' || c == '>') && flow_depth_ == 0 && opens_node) {
      block_scalar_indent_ = static_cast<long>(line.find_first_not_of(' '));
      return true;
    }
    // Only indicators can open a node after them: ':', '-' and '?' followed by a space, and
    // ',' inside a flow. Anything else is part of a scalar.
    bool spaced = i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t';
    bool indicator =
        (c == ',' && flow_depth_ > 0) || ((c == ':' || c == '-' || c == '?') && spaced);
    prev = indicator ? c : 'x';
  }
  return true;
}

}  // namespace

bool PrescanSpec(std::string_view text, SpecErrors* errors) {
  if (text.size() > kMaxSpecBytes) {
    errors->Add(SpecPosition{}, "",
                "the spec is " + std::to_string(text.size()) + " bytes; the limit is " +
                    std::to_string(kMaxSpecBytes) + " bytes (1 MiB)");
    return false;
  }
  if (!CheckUtf8(text, errors)) return false;
  NestingScanner scanner(errors);
  int line_number = 1;
  for (size_t start = 0; start <= text.size(); ++line_number) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    if (!scanner.ScanLine(text.substr(start, end - start), line_number)) return false;
    start = end + 1;
  }
  return true;
}

std::optional<SpecPosition> FindTabIndentation(std::string_view text, int line) {
  int line_number = 1;
  for (size_t start = 0; start < text.size() && line_number <= line; ++line_number) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(start, end - start);
    size_t content = l.find_first_not_of(" \t");
    size_t tab = l.find('\t');
    if (content != std::string_view::npos && tab < content && l[content] != '#') {
      return SpecPosition{line_number, static_cast<int>(tab) + 1};
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace ablate
