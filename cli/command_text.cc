// Text shared by the commands; see command_text.h.
#include "cli/command_text.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "cli/table.h"

namespace ablate {

using nlohmann::json;

std::string StateName(v1::SweepState s) {
  std::string n = v1::SweepState_Name(s);
  n = n.substr(n.find('_') + 1);
  for (char& ch : n) ch = static_cast<char>(std::tolower(ch));
  return n;
}

std::string StateName(v1::RunState s) {
  std::string n = v1::RunState_Name(s);
  n = n.substr(n.find('_') + 1);
  for (char& ch : n) ch = static_cast<char>(std::tolower(ch));
  return n;
}

std::string Progress(const v1::RunCounts& c) {
  int done = c.succeeded() + c.failed() + c.cancelled();
  return std::to_string(done) + "/" + std::to_string(c.total());
}

std::string Join(const google::protobuf::RepeatedPtrField<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

std::string DiffSummary(const std::string& diff_json) {
  json d = json::parse(diff_json, nullptr, false);
  if (!d.is_object() || d.empty()) return "-";
  std::string out;
  for (auto it = d.begin(); it != d.end(); ++it) {
    if (!out.empty()) out += ", ";
    out += it.key() + " " + it.value()["from"].dump() + "→" + it.value()["to"].dump();
  }
  return out;
}

std::string DiffSummary(const v1::Variant& v) {
  std::string out = DiffSummary(v.diff_json());
  if (v.same_work()) out += " (declared: same work per step)";
  return out;
}

std::string OptDouble(bool has, double v, int precision) {
  return has ? FormatDouble(v, precision) : "-";
}

}  // namespace ablate
