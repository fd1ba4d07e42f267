// --gpus parsing.
#include "trainer/tools/gpu_list.h"

#include <charconv>
#include <set>
#include <string>

namespace ablate {
namespace {

constexpr int kMaxIndex = 65535;

Result<int> ParseIndex(std::string_view s, std::string_view item) {
  int v = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0 || v > kMaxIndex) {
    return Error{"--gpus: '" + std::string(item) +
                     "' is not a GPU index or range (examples: 0-7, 0,2,4, 0-3,6)",
                 "gpus"};
  }
  return v;
}

}  // namespace

Result<std::vector<int>> ParseGpuList(std::string_view text) {
  std::vector<int> out;
  std::set<int> seen;
  if (text.empty()) return Error{"--gpus: empty list", "gpus"};
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item = text.substr(pos, comma == std::string_view::npos ? text.npos : comma - pos);
    size_t dash = item.find('-');
    Result<int> lo = ParseIndex(item.substr(0, dash), item);
    if (!lo.ok()) return lo.error();
    int hi = *lo;
    if (dash != std::string_view::npos) {
      Result<int> h = ParseIndex(item.substr(dash + 1), item);
      if (!h.ok()) return h.error();
      if (*h < *lo) return Error{"--gpus: range '" + std::string(item) + "' runs backwards", "gpus"};
      hi = *h;
    }
    for (int g = *lo; g <= hi; ++g) {
      if (!seen.insert(g).second) {
        return Error{"--gpus: GPU " + std::to_string(g) + " is named twice", "gpus"};
      }
      out.push_back(g);
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace ablate
