// Decomposing a record (issue 29): the diff between two versions of a training script (FROM and
// TO) split into changes, and FROM rebuilt with any subset of them. `ablate decompose` and the
// spec key `decompose:` (server/sweep/script_expander.h) expand a script sweep from these variants:
// FROM (the baseline), TO, each change added alone to FROM (add-one-in) and each change removed
// alone from TO (leave-one-out).
//
// What a change is. The diff is taken line by line (code_snapshot.h DiffLines); a change starts
// as one hunk of `diff -u` (edits at most 6 unchanged lines apart, as 3 lines of context on each
// side join them). Hunks are merged into one change
//   * by a marker: a line added in TO that holds `ablate-change: NAME` (usually a comment,
//     `# ablate-change: merged-qkv`) names its hunk NAME; hunks with the same NAME are one change;
//   * by a group (`--group NAME=12-30,88-90`, or `groups: {NAME: "12-30,88-90"}` in the spec):
//     a hunk whose TO lines (1-based, inclusive; for a pure removal, the TO line after which it
//     was removed) meet a range joins change NAME. A group wins over a marker.
// Other hunks are named after their first TO line ("L120"). Changes are in the order of their
// first hunk.
//
// Pure functions over text; no file system, no processes (the CLI compiles the variants).
#ifndef ABLATE_COMMON_DECOMPOSE_SCRIPT_CHANGES_H_
#define ABLATE_COMMON_DECOMPOSE_SCRIPT_CHANGES_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace ablate {

// The most changes one decomposition may hold (2k + 2 variants, each run with every seed).
inline constexpr int kMaxScriptChanges = 40;

inline constexpr std::string_view kChangeMarker = "ablate-change:";

// A group of hunks the researcher declares to be one change: TO line ranges, 1-based inclusive.
struct ChangeGroup {
  std::string name;
  std::vector<std::pair<int, int>> ranges;
};

// Parses "NAME=12-30,88" (a single line is a range of one). INVALID_ARGUMENT naming what is
// wrong: a bad name (1 to 40 characters from A-Z a-z 0-9 . _ -), a missing '=', a range that is
// not FIRST-LAST with 1 <= FIRST <= LAST.
absl::StatusOr<ChangeGroup> ParseChangeGroup(std::string_view text);
// The same for the ranges alone ("12-30,88"), as the spec's `groups:` values write them.
absl::StatusOr<ChangeGroup> ParseChangeRanges(std::string name, std::string_view ranges);

// One contiguous edit: FROM lines [from_begin, from_end) (0-based) become `to_lines`, which are
// TO lines [to_begin, to_begin + to_lines.size()). Lines keep their '\n'.
struct LineBlock {
  int from_begin = 0, from_end = 0;
  int to_begin = 0;
  std::vector<std::string> to_lines;
};

struct ScriptChange {
  std::string name;
  std::string named_by;  // "group", "marker" or "line"
  std::vector<LineBlock> blocks;  // in file order
  int hunks = 0;                  // diff hunks merged into it
  int from_first = 0, from_last = 0;  // 1-based FROM lines it spans (for the reader)
  int to_first = 0, to_last = 0;      // 1-based TO lines it spans (a removal: the line before)
};

// The split of FROM -> TO.
struct ChangeSplit {
  std::vector<ScriptChange> changes;
  std::vector<std::string> notes;  // for the reader, e.g. a hunk holding two different markers
};

// Splits the diff from `from` to `to`. INVALID_ARGUMENT when the texts are equal, too large to
// diff line by line, hold more than kMaxScriptChanges changes (the message says to merge them
// with markers or groups), or when a group meets no hunk, two groups claim one hunk, or a group
// name repeats.
absl::StatusOr<ChangeSplit> SplitChanges(std::string_view from, std::string_view to,
                                         const std::vector<ChangeGroup>& groups);

// FROM with the changes whose index is in `take` applied. INTERNAL when a change's lines are
// not where the split found them in `from` (the patch does not apply) or an index is out of range.
absl::StatusOr<std::string> ApplyChanges(std::string_view from, const ChangeSplit& split,
                                         const std::vector<int>& take);

// One variant of a decomposition: the changes it carries on top of FROM (indices, ascending).
// Roles: "to" (every change), "add-NAME" (add-one-in) and "drop-NAME" (leave-one-out). Variants
// whose change sets coincide are one variant with every role (2 changes: add-a is drop-b; 1
// change: add-a is TO and drop-a is FROM, so it is left out). FROM itself is not listed.
struct DecomposeVariant {
  std::string name;  // its first role
  std::vector<int> changes;
  std::vector<std::string> roles;
};
std::vector<DecomposeVariant> DecomposeVariants(const std::vector<ScriptChange>& changes);

}  // namespace ablate

#endif  // ABLATE_COMMON_DECOMPOSE_SCRIPT_CHANGES_H_
