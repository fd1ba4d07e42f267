// The problems found in one spec file (a sweep spec, the pools file), rendered as a single
// INVALID_ARGUMENT status with one line per problem: "file:line:column: key.path: problem".
// Positions are 1-based.
#ifndef ABLATE_COMMON_SPEC_SPEC_ERRORS_H_
#define ABLATE_COMMON_SPEC_SPEC_ERRORS_H_

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace ablate {

// A 1-based line and column in the spec text. Columns count bytes here, as yaml-cpp's marks do;
// SpecErrors renders them as characters. Unknown positions are reported as 1:1.
struct SpecPosition {
  int line = 1;
  int column = 1;
};

// Converts yaml-cpp's 0-based mark (-1 when unknown) to a SpecPosition.
SpecPosition PositionOf(const YAML::Mark& mark);
// The position of `node`, or of nothing in particular (1:1) for a missing node.
SpecPosition PositionOf(const YAML::Node& node);

// Not thread-safe; one per parse.
class SpecErrors {
 public:
  // At most this many lines are rendered, and this many problems kept; the rest are counted
  // in a final line.
  static constexpr size_t kMaxRendered = 50;
  static constexpr size_t kMaxKept = 1000;

  // `text` (the spec, kept by the caller while this lives) turns byte columns into character
  // columns when rendering; without it, columns are rendered as bytes.
  explicit SpecErrors(std::string_view file_name, std::string_view text = {})
      : file_(file_name), text_(text) {}

  // `path` names the offending key ("ablations[2].set.logit_softcapp"); it may be empty for
  // problems of the whole file. Identical problems are recorded once.
  void Add(SpecPosition at, std::string_view path, std::string_view problem);
  void Add(const YAML::Node& node, std::string_view path, std::string_view problem) {
    Add(PositionOf(node), path, problem);
  }

  bool empty() const { return total_ == 0; }
  // Every distinct problem added, kept or not.
  size_t size() const { return total_; }

  // OK when empty; otherwise INVALID_ARGUMENT listing every problem in document order (by line,
  // then column; problems at one position keep the order in which they were found).
  absl::Status ToStatus() const;

 private:
  struct Entry {
    SpecPosition at;
    std::string text;  // "path: problem"
  };
  int CharacterColumn(SpecPosition at) const;

  std::string file_;
  std::string_view text_;
  std::vector<Entry> entries_;
  std::set<std::string> seen_;  // "line:column:text" of kept entries
  size_t total_ = 0;
};

// "ablations" + 2 -> "ablations[2]"; "ablations[2]" + "set" -> "ablations[2].set".
std::string IndexPath(std::string_view parent, size_t index);
std::string KeyPath(std::string_view parent, std::string_view key);

}  // namespace ablate

#endif  // ABLATE_COMMON_SPEC_SPEC_ERRORS_H_
