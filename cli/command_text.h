// Text that several `ablate` commands print the same way: state names, progress, lists, a
// variant's changes against the baseline, optional numbers.
#ifndef ABLATE_CLI_COMMAND_TEXT_H_
#define ABLATE_CLI_COMMAND_TEXT_H_

#include <cctype>
#include <cstdint>
#include <string>

#include "ablate/v1/types.pb.h"

namespace ablate {

// "running", "succeeded", ...: the enum's name without its prefix, lower case.
std::string StateName(v1::SweepState s);
std::string StateName(v1::RunState s);

// `text` ("running", any case) as the enum value named prefix + TEXT ("SWEEP_RUNNING"), through
// the enum's generated `parse`; false when there is none.
template <class Enum>
bool ParseState(const std::string& text, Enum* out, bool (*parse)(const std::string&, Enum*),
                const std::string& prefix) {
  std::string upper;
  for (char ch : text) upper += static_cast<char>(std::toupper(ch));
  return parse(prefix + upper, out);
}

// "done/total" runs of a sweep (done: succeeded, failed or cancelled).
std::string Progress(const v1::RunCounts& c);

// The strings joined with commas.
std::string Join(const google::protobuf::RepeatedPtrField<std::string>& v);

// "logit_softcap 15→30, unet_skips true→false" from a variant's diff JSON; "-" when empty.
std::string DiffSummary(const std::string& diff_json);
// DiffSummary, and for a script ablation declared `same_work: true`, that declaration.
std::string DiffSummary(const v1::Variant& v);

// `v` with `precision` digits when `has`, else "-".
std::string OptDouble(bool has, double v, int precision);

}  // namespace ablate

#endif  // ABLATE_CLI_COMMAND_TEXT_H_
