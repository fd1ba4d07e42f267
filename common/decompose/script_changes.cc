// Splitting a script diff into changes and rebuilding FROM with some of them.
#include "common/decompose/script_changes.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include "common/code_snapshot.h"
#include "common/text_lines.h"

namespace ablate {
namespace {

// Unchanged lines that still join two edits into one hunk: 3 lines of context on each side.
constexpr int kHunkJoin = 6;
constexpr size_t kMaxChangeName = 40;

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

bool IsChangeName(std::string_view s) {
  return !s.empty() && s.size() <= kMaxChangeName && std::all_of(s.begin(), s.end(), IsNameChar);
}

// The maximal runs of edits.
std::vector<LineBlock> Blocks(const std::vector<LineEdit>& edits) {
  std::vector<LineBlock> blocks;
  for (size_t k = 0; k < edits.size();) {
    if (edits[k].kind == ' ') {
      ++k;
      continue;
    }
    LineBlock b;
    b.from_begin = b.from_end = edits[k].from_line;
    b.to_begin = edits[k].to_line;
    for (; k < edits.size() && edits[k].kind != ' '; ++k) {
      if (edits[k].kind == '-') ++b.from_end;
      if (edits[k].kind == '+') b.to_lines.emplace_back(edits[k].text);
    }
    blocks.push_back(std::move(b));
  }
  return blocks;
}

// The blocks joined into diff -u hunks.
std::vector<std::vector<LineBlock>> Hunks(std::vector<LineBlock> blocks) {
  std::vector<std::vector<LineBlock>> hunks;
  for (LineBlock& b : blocks) {
    if (!hunks.empty() && b.from_begin - hunks.back().back().from_end <= kHunkJoin) {
      hunks.back().push_back(std::move(b));
    } else {
      hunks.push_back({std::move(b)});
    }
  }
  return hunks;
}

// 1-based TO lines a block touches: its added lines, or for a removal the line before it.
std::pair<int, int> ToSpan(const LineBlock& b) {
  if (b.to_lines.empty()) return {std::max(1, b.to_begin), std::max(1, b.to_begin)};
  return {b.to_begin + 1, b.to_begin + static_cast<int>(b.to_lines.size())};
}

bool Meets(const std::vector<LineBlock>& hunk, const ChangeGroup& g) {
  for (const LineBlock& b : hunk) {
    auto [first, last] = ToSpan(b);
    for (auto [lo, hi] : g.ranges) {
      if (first <= hi && lo <= last) return true;
    }
  }
  return false;
}

// The marker names on the hunk's added lines, in order, distinct.
std::vector<std::string> Markers(const std::vector<LineBlock>& hunk) {
  std::vector<std::string> names;
  for (const LineBlock& b : hunk) {
    for (std::string_view line : b.to_lines) {
      size_t at = line.find(kChangeMarker);
      if (at == std::string_view::npos) continue;
      std::string_view rest = line.substr(at + kChangeMarker.size());
      while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
      size_t len = 0;
      while (len < rest.size() && IsNameChar(rest[len])) ++len;
      std::string name(rest.substr(0, std::min(len, kMaxChangeName)));
      if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
        names.push_back(name);
      }
    }
  }
  return names;
}

// Which change a hunk belongs to: its group, its first marker, or its first line.
absl::StatusOr<std::pair<std::string, std::string>> HunkName(
    const std::vector<LineBlock>& hunk, const std::vector<ChangeGroup>& groups,
    std::vector<bool>* group_used, std::vector<std::string>* notes) {
  std::optional<size_t> group;
  const int line = ToSpan(hunk.front()).first;
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!Meets(hunk, groups[g])) continue;
    if (group) {
      return absl::InvalidArgumentError(
          "groups '" + groups[*group].name + "' and '" + groups[g].name +
          "' both claim the hunk at TO line " + std::to_string(line) +
          "; a hunk belongs to one change (hunks are edits at most 6 unchanged lines apart)");
    }
    group = g;
  }
  if (group) {
    (*group_used)[*group] = true;
    return std::pair<std::string, std::string>{groups[*group].name, "group"};
  }
  std::vector<std::string> markers = Markers(hunk);
  if (markers.size() > 1) {
    notes->push_back("the hunk at TO line " + std::to_string(line) + " holds markers '" +
                     markers[0] + "' and '" + markers[1] + "'; it is one hunk, so it joins '" +
                     markers[0] + "'");
  }
  if (!markers.empty()) return std::pair<std::string, std::string>{markers[0], "marker"};
  return std::pair<std::string, std::string>{"L" + std::to_string(line), "line"};
}

void AddHunk(std::vector<LineBlock> hunk, ScriptChange* c) {
  auto [to_first, unused] = ToSpan(hunk.front());
  auto [unused2, to_last] = ToSpan(hunk.back());
  (void)unused, (void)unused2;
  const int from_first = hunk.front().from_begin + 1;
  const int from_last = std::max(hunk.back().from_end, from_first);
  if (c->hunks == 0) {
    c->from_first = from_first, c->to_first = to_first;
  }
  c->from_last = from_last, c->to_last = to_last;
  c->hunks += 1;
  for (LineBlock& b : hunk) c->blocks.push_back(std::move(b));
}

std::optional<int> ParseLine(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// "12-30" or "12".
std::optional<std::pair<int, int>> ParseRange(std::string_view part) {
  const size_t dash = part.find('-');
  std::optional<int> lo = ParseLine(part.substr(0, dash));
  std::optional<int> hi = dash == std::string_view::npos ? lo : ParseLine(part.substr(dash + 1));
  if (!lo || !hi || *lo < 1 || *hi < *lo) return std::nullopt;
  return std::pair<int, int>{*lo, *hi};
}

}  // namespace

absl::StatusOr<ChangeGroup> ParseChangeRanges(std::string name, std::string_view ranges) {
  if (!IsChangeName(name)) {
    return absl::InvalidArgumentError(
        "group name '" + name + "' is invalid: use 1 to 40 characters from A-Z a-z 0-9 . _ -");
  }
  ChangeGroup g{std::move(name), {}};
  while (true) {
    const size_t comma = ranges.find(',');
    const std::string_view part = ranges.substr(0, comma);
    if (std::optional<std::pair<int, int>> r = ParseRange(part)) {
      g.ranges.push_back(*r);
    } else {
      return absl::InvalidArgumentError("group '" + g.name + "': '" + std::string(part) +
                                        "' is not a TO line range FIRST-LAST (1-based, "
                                        "FIRST <= LAST), e.g. 12-30");
    }
    if (comma == std::string_view::npos) break;
    ranges.remove_prefix(comma + 1);
  }
  return g;
}

absl::StatusOr<ChangeGroup> ParseChangeGroup(std::string_view text) {
  size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return absl::InvalidArgumentError("--group '" + std::string(text) +
                                      "' must be NAME=RANGES, e.g. merged-qkv=12-30,88-90");
  }
  return ParseChangeRanges(std::string(text.substr(0, eq)), text.substr(eq + 1));
}

absl::StatusOr<ChangeSplit> SplitChanges(std::string_view from, std::string_view to,
                                         const std::vector<ChangeGroup>& groups) {
  if (from == to) return absl::InvalidArgumentError("FROM and TO are the same script: no change");
  for (size_t i = 0; i < groups.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (groups[i].name == groups[j].name) {
        return absl::InvalidArgumentError("group '" + groups[i].name + "' is given twice");
      }
    }
  }
  std::optional<std::vector<LineEdit>> edits = DiffLines(LinesWithNewlines(from), LinesWithNewlines(to));
  if (!edits) return absl::InvalidArgumentError("FROM and TO are too large to diff line by line");
  ChangeSplit split;
  std::map<std::string, size_t> by_name;
  std::vector<bool> group_used(groups.size(), false);
  for (std::vector<LineBlock>& hunk : Hunks(Blocks(*edits))) {
    absl::StatusOr<std::pair<std::string, std::string>> name =
        HunkName(hunk, groups, &group_used, &split.notes);
    if (!name.ok()) return name.status();
    auto [it, added] = by_name.emplace(name->first, split.changes.size());
    if (added) split.changes.push_back({name->first, name->second, {}, 0, 0, 0, 0, 0});
    AddHunk(std::move(hunk), &split.changes[it->second]);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    if (!group_used[g]) {
      return absl::InvalidArgumentError("group '" + groups[g].name +
                                        "' meets no changed line of TO");
    }
  }
  if (split.changes.size() > static_cast<size_t>(kMaxScriptChanges)) {
    return absl::InvalidArgumentError(
        "the diff holds " + std::to_string(split.changes.size()) + " changes; at most " +
        std::to_string(kMaxScriptChanges) + " can be decomposed: merge hunks that belong together "
        "with '# ablate-change: NAME' markers in TO or --group NAME=LINES");
  }
  return split;
}

absl::StatusOr<std::string> ApplyChanges(std::string_view from, const ChangeSplit& split,
                                         const std::vector<int>& take) {
  std::vector<const LineBlock*> blocks;
  for (int i : take) {
    if (i < 0 || static_cast<size_t>(i) >= split.changes.size()) {
      return absl::InternalError("change index " + std::to_string(i) + " out of range");
    }
    for (const LineBlock& b : split.changes[i].blocks) blocks.push_back(&b);
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const LineBlock* a, const LineBlock* b) { return a->from_begin < b->from_begin; });
  const std::vector<std::string_view> lines = LinesWithNewlines(from);
  std::string out;
  int at = 0;
  for (const LineBlock* b : blocks) {
    if (b->from_begin < at || b->from_end > static_cast<int>(lines.size())) {
      return absl::InternalError("the change at FROM line " + std::to_string(b->from_begin + 1) +
                                 " does not apply: its lines are not where the split found them");
    }
    for (; at < b->from_begin; ++at) out += lines[at];
    for (const std::string& l : b->to_lines) out += l;
    at = b->from_end;
  }
  for (; at < static_cast<int>(lines.size()); ++at) out += lines[at];
  return out;
}

std::vector<DecomposeVariant> DecomposeVariants(const std::vector<ScriptChange>& changes) {
  const int k = static_cast<int>(changes.size());
  std::vector<DecomposeVariant> out;
  auto add = [&](std::string role, std::vector<int> set) {
    if (set.empty()) return;  // FROM, the baseline
    for (DecomposeVariant& v : out) {
      if (v.changes == set) return v.roles.push_back(std::move(role));
    }
    out.push_back({role, std::move(set), {role}});
  };
  std::vector<int> all;
  for (int i = 0; i < k; ++i) all.push_back(i);
  add("to", all);
  for (int i = 0; i < k; ++i) add("add-" + changes[i].name, {i});
  for (int i = 0; i < k; ++i) {
    std::vector<int> rest;
    for (int j = 0; j < k; ++j) {
      if (j != i) rest.push_back(j);
    }
    add("drop-" + changes[i].name, rest);
  }
  return out;
}

}  // namespace ablate
