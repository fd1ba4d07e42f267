// A 40-line script of numbered assignments ("x1 = 1" ... "x40 = 40") with chosen lines edited:
// the FROM and TO scripts of the decompose tests (script_changes_test, decompose_test).
#ifndef ABLATE_TESTS_COMMON_NUMBERED_SCRIPT_H_
#define ABLATE_TESTS_COMMON_NUMBERED_SCRIPT_H_

#include <map>
#include <string>

namespace ablate::testing {

// `edits` replaces line i (1-based) with its text ("" removes it).
inline std::string NumberedScript(const std::map<int, std::string>& edits = {},
                                  bool final_newline = true) {
  std::string out;
  for (int i = 1; i <= 40; ++i) {
    auto it = edits.find(i);
    if (it == edits.end()) {
      out += "x" + std::to_string(i) + " = " + std::to_string(i) + "\n";
    } else if (!it->second.empty()) {
      out += it->second + "\n";
    }
  }
  if (!final_newline) out.pop_back();
  return out;
}

}  // namespace ablate::testing

#endif  // ABLATE_TESTS_COMMON_NUMBERED_SCRIPT_H_
