// Document loading: one event pass that counts documents (bounded), then one node pass.
#include "common/spec/spec_document.h"

#include <yaml-cpp/eventhandler.h>

#include <sstream>
#include <string>

#include "common/spec/spec_prescan.h"

namespace ablate {
namespace {

// Records where each document starts; ignores everything else.
class DocumentCounter : public YAML::EventHandler {
 public:
  int documents() const { return documents_; }
  const YAML::Mark& second_start() const { return second_start_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ == 2) second_start_ = mark;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

 private:
  int documents_ = 0;
  YAML::Mark second_start_ = YAML::Mark::null_mark();
};

void AddSyntaxError(std::string_view text, const YAML::Exception& e, SpecErrors* errors) {
  SpecPosition at = PositionOf(e.mark);
  if (std::optional<SpecPosition> tab = FindTabIndentation(text, at.line)) {
    errors->Add(*tab, "", "tab character in indentation; YAML indents with spaces only");
    return;
  }
  std::string hint;
  if (e.msg.find("flow not found") != std::string::npos) {
    hint = " (an unclosed '[' or '{'?)";
  } else if (e.msg.find("end of map not found") != std::string::npos ||
             e.msg.find("illegal map value") != std::string::npos) {
    hint = " (is the indentation consistent?)";
  }
  errors->Add(at, "", "YAML syntax error: " + e.msg + hint);
}

void AddSecondDocument(std::string_view text, const YAML::Mark& mark, SpecErrors* errors) {
  size_t pos = mark.pos >= 0 ? static_cast<size_t>(mark.pos) : text.size();
  std::string_view rest = pos < text.size() ? text.substr(pos) : "";
  if (rest.starts_with("---") || rest.starts_with("...")) {
    errors->Add(PositionOf(mark), "", "a spec is one YAML document; another one starts here");
  } else {
    std::string what = rest.empty() ? "content" : "'" + std::string(1, rest[0]) + "'";
    errors->Add(PositionOf(mark), "", "YAML syntax error: unexpected " + what + " here");
  }
}

}  // namespace

std::optional<YAML::Node> LoadSpecDocument(std::string_view text, SpecErrors* errors) {
  std::string owned(text);
  try {
    std::istringstream events_in(owned);
    YAML::Parser parser(events_in);
    DocumentCounter counter;
    while (counter.documents() < 2 && parser.HandleNextDocument(counter)) {
    }
    if (counter.documents() >= 2) {
      AddSecondDocument(text, counter.second_start(), errors);
      return std::nullopt;
    }
    return YAML::Load(owned);
  } catch (const YAML::Exception& e) {
    AddSyntaxError(text, e, errors);
    return std::nullopt;
  }
}

}  // namespace ablate
