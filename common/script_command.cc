// Placeholder scanning and expansion for `command:` templates.
#include "common/script_command.h"

#include <algorithm>

namespace ablate {
namespace {

bool Known(std::string_view name) {
  return std::find(std::begin(kCommandPlaceholders), std::end(kCommandPlaceholders), name) !=
         std::end(kCommandPlaceholders);
}

std::string KnownList() {
  std::string out;
  for (std::string_view p : kCommandPlaceholders) out += (out.empty() ? "{" : ", {") + std::string(p) + "}";
  return out;
}

// Walks `command`, calling on_text for literal text and on_name for each placeholder.
template <typename Text, typename Name>
absl::Status Scan(std::string_view command, Text on_text, Name on_name) {
  for (size_t i = 0; i < command.size(); ++i) {
    char c = command[i];
    if ((c == '{' || c == '}') && i + 1 < command.size() && command[i + 1] == c) {
      on_text(c), ++i;
    } else if (c == '{') {
      size_t close = command.find('}', i);
      if (close == std::string_view::npos) {
        return absl::InvalidArgumentError("unclosed '{' at character " + std::to_string(i + 1) +
                                          " (write {{ for a literal brace)");
      }
      std::string name(command.substr(i + 1, close - i - 1));
      if (!Known(name)) {
        return absl::InvalidArgumentError("unknown placeholder {" + name + "}; known: " +
                                          KnownList());
      }
      if (absl::Status s = on_name(name); !s.ok()) return s;
      i = close;
    } else {
      on_text(c);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> CommandPlaceholders(std::string_view command) {
  std::vector<std::string> names;
  absl::Status s = Scan(
      command, [](char) {},
      [&](const std::string& name) {
        names.push_back(name);
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return names;
}

absl::StatusOr<std::string> ExpandCommand(std::string_view command,
                                          const std::map<std::string, std::string>& values) {
  std::string out;
  absl::Status s = Scan(
      command, [&](char c) { out += c; },
      [&](const std::string& name) {
        auto it = values.find(name);
        if (it == values.end()) return absl::InvalidArgumentError("no value for {" + name + "}");
        out += it->second;
        return absl::OkStatus();
      });
  if (!s.ok()) return s;
  return out;
}

std::string ShellQuote(std::string_view arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string EnvNameProblem(std::string_view name) {
  auto ok_char = [](char c, bool first) {
    return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (!first && c >= '0' && c <= '9');
  };
  bool valid = !name.empty() && name.size() <= 200;
  for (size_t i = 0; valid && i < name.size(); ++i) valid = ok_char(name[i], i == 0);
  if (!valid) return "'" + std::string(name) + "' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)";
  if (name.starts_with("ABLATE_") || name == "CUDA_VISIBLE_DEVICES") {
    return std::string(name) + " is set by the worker for every run and cannot be overridden";
  }
  return "";
}

}  // namespace ablate
