// Loads the one YAML document of a spec file (a sweep spec, the pools file) with yaml-cpp,
// translating its exceptions (here and only here) into positioned spec errors.
#ifndef ABLATE_COMMON_SPEC_SPEC_DOCUMENT_H_
#define ABLATE_COMMON_SPEC_SPEC_DOCUMENT_H_

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string_view>

#include "common/spec/spec_errors.h"

namespace ablate {

// The document's root node (Null for an empty text), or nullopt after adding one error: a YAML
// syntax error (a tab in the indentation is named as such), or more than one document.
// REQUIRES: `text` passed PrescanSpec, so that yaml-cpp never recurses deeply.
// Bounded: yaml-cpp 0.7's LoadAll loops forever on some inputs (a leading ','); this reads at
// most two documents' events and builds only the first.
std::optional<YAML::Node> LoadSpecDocument(std::string_view text, SpecErrors* errors);

}  // namespace ablate

#endif  // ABLATE_COMMON_SPEC_SPEC_DOCUMENT_H_
