// Collecting and rendering sweep-spec problems.
#include "common/spec/spec_errors.h"

#include <algorithm>

namespace ablate {

SpecPosition PositionOf(const YAML::Mark& mark) {
  SpecPosition at;
  if (mark.line >= 0) at.line = mark.line + 1;
  if (mark.column >= 0) at.column = mark.column + 1;
  return at;
}

SpecPosition PositionOf(const YAML::Node& node) {
  if (!node.IsDefined()) return SpecPosition{};
  return PositionOf(node.Mark());
}

void SpecErrors::Add(SpecPosition at, std::string_view path, std::string_view problem) {
  std::string text =
      path.empty() ? std::string(problem) : std::string(path) + ": " + std::string(problem);
  if (entries_.size() >= kMaxKept) {
    ++total_;
    return;
  }
  std::string key = std::to_string(at.line) + ":" + std::to_string(at.column) + ":" + text;
  if (!seen_.insert(std::move(key)).second) return;
  ++total_;
  entries_.push_back(Entry{at, std::move(text)});
}

absl::Status SpecErrors::ToStatus() const {
  if (total_ == 0) return absl::OkStatus();
  std::vector<Entry> sorted = entries_;
  std::stable_sort(sorted.begin(), sorted.end(), [](const Entry& a, const Entry& b) {
    if (a.at.line != b.at.line) return a.at.line < b.at.line;
    return a.at.column < b.at.column;
  });
  std::string message;
  size_t shown = std::min(sorted.size(), kMaxRendered);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) message += '\n';
    message += file_ + ":" + std::to_string(sorted[i].at.line) + ":" +
               std::to_string(CharacterColumn(sorted[i].at)) + ": " + sorted[i].text;
  }
  if (total_ > shown) {
    message += "\n" + file_ + ": ... and " + std::to_string(total_ - shown) + " more problems";
  }
  return absl::InvalidArgumentError(message);
}

int SpecErrors::CharacterColumn(SpecPosition at) const {
  if (text_.empty()) return at.column;
  size_t start = 0;
  for (int line = 1; line < at.line; ++line) {
    start = text_.find('\n', start);
    if (start == std::string_view::npos) return at.column;
    ++start;
  }
  size_t end = start + static_cast<size_t>(at.column - 1);
  int column = 1;
  size_t i = start;
  for (; i < end && i < text_.size() && text_[i] != '\n'; ++i) {
    if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80) ++column;
  }
  return column + static_cast<int>(end - i);  // past the end of the line: one per byte
}

std::string IndexPath(std::string_view parent, size_t index) {
  return std::string(parent) + "[" + std::to_string(index) + "]";
}

std::string KeyPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return std::string(parent) + "." + std::string(key);
}

}  // namespace ablate
