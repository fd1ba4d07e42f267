// Validation, canonical form, hashing and diffs over the knob table (knob_table.cc).
#include "trainer/config/knob_schema.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "common/edit_distance.h"
#include "trainer/config/sha256.h"

namespace ablate {
namespace {

using J = nlohmann::json;

// A value as the error message shows it. Strings come from YAML the user wrote and may hold
// invalid UTF-8, which a plain dump() refuses with an exception: such bytes print as U+FFFD.
std::string Describe(const J& v) { return v.dump(-1, ' ', false, J::error_handler_t::replace); }

Error KnobError(const KnobSpec& k, const std::string& what) {
  return Error{std::string(k.name) + ": " + what, std::string(k.name)};
}

Result<double> Number(const KnobSpec& k, const J& v) {
  if (!v.is_number()) {
    return KnobError(k, "expected a number, got " + Describe(v));
  }
  double d = v.get<double>();
  if (!std::isfinite(d)) return KnobError(k, "expected a finite number");
  if (d < k.min || d > k.max) {
    std::ostringstream os;
    os << "value " << Describe(v) << " is out of range [" << k.min << ", " << k.max << "]";
    return KnobError(k, os.str());
  }
  return d;
}

Result<J> ValidateInt(const KnobSpec& k, const J& v) {
  Result<double> d = Number(k, v);
  if (!d.ok()) return d.error();
  if (std::floor(*d) != *d) return KnobError(k, "expected an integer, got " + Describe(v));
  return J(static_cast<long long>(*d));
}

Result<J> ValidateList(const KnobSpec& k, const J& v) {
  if (!v.is_array()) return KnobError(k, "expected a list, got " + Describe(v));
  if (k.list_size > 0 && v.size() != k.list_size) {
    return KnobError(k, "expected " + std::to_string(k.list_size) + " numbers, got " +
                            std::to_string(v.size()));
  }
  J out = J::array();
  for (const J& e : v) {
    Result<J> one = k.type == KnobType::kIntList ? ValidateInt(k, e) : Result<J>(J());
    if (k.type == KnobType::kFloatList) {
      Result<double> d = Number(k, e);
      if (!d.ok()) return d.error();
      one = J(*d);
    }
    if (!one.ok()) return one.error();
    out.push_back(*one);
  }
  if (k.type == KnobType::kIntList) std::sort(out.begin(), out.end());
  return out;
}

// Flattens {"a": {"b": 1}} into {"a.b": 1}. An object value for a knob that is not a group is
// left as it is, to be rejected by type checking.
void Flatten(const J& obj, const std::string& prefix, J* out) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::string name = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it.value().is_object() && FindKnob(name) == nullptr) {
      Flatten(it.value(), name, out);
    } else {
      (*out)[name] = it.value();
    }
  }
}

Error UnknownKnob(const std::string& name) {
  std::string msg = "unknown knob '" + name + "'";
  std::vector<std::string> near = ClosestKnobNames(name);
  if (!near.empty()) {
    msg += "; did you mean ";
    for (size_t i = 0; i < near.size(); ++i) {
      msg += (i ? ", '" : "'") + near[i] + "'";
    }
    msg += "?";
  }
  return Error{msg, name};
}

Status CheckCrossKnobRules(const J& c) {
  auto i = [&](const char* k) { return c.at(k).get<long long>(); };
  if (i("n_head") * i("head_dim") != i("model_dim")) {
    return Error{"model_dim (" + std::to_string(i("model_dim")) + ") must equal n_head (" +
                     std::to_string(i("n_head")) + ") * head_dim (" + std::to_string(i("head_dim")) +
                     ")",
                 "model_dim"};
  }
  if (i("head_dim") % 2 != 0 || (c.at("rope") == "half_truncated" && i("head_dim") % 4 != 0)) {
    return Error{"head_dim must be even (a multiple of 4 for rope=half_truncated)", "head_dim"};
  }
  if (i("device_batch_tokens") % i("seq_len") != 0) {
    return Error{"device_batch_tokens must be a multiple of seq_len", "device_batch_tokens"};
  }
  if (i("batch_tokens") % i("device_batch_tokens") != 0) {
    return Error{"batch_tokens must be a multiple of device_batch_tokens", "batch_tokens"};
  }
  long long L = i("n_layer"), ve = i("value_embeds");
  if (ve != 0 && ve != L && 2 * ve > L) {
    return Error{"value_embeds must be 0, n_layer, or at most n_layer/2 (got " +
                     std::to_string(ve) + " with n_layer " + std::to_string(L) + ")",
                 "value_embeds"};
  }
  if (ve != 0 && c.at("value_residual").get<bool>()) {
    return Error{"value_residual and value_embeds are alternatives (r18 replaced the first with "
                 "the second); turn one off",
                 "value_residual"};
  }
  if (c.at("unet_skips").get<bool>() && L % 2 != 0) {
    return Error{"unet_skips needs an even n_layer", "unet_skips"};
  }
  for (const J& layer : c.at("skip_attn_layers")) {
    if (layer.get<long long>() >= L) {
      return Error{"skip_attn_layers: layer " + layer.dump() + " does not exist (n_layer " +
                       std::to_string(L) + ")",
                   "skip_attn_layers"};
    }
  }
  long long ev = i("embed_vocab_size");
  if (ev > i("vocab_size")) {
    return Error{"embed_vocab_size must not exceed vocab_size", "embed_vocab_size"};
  }
  if (i("bos_token") >= (ev > 0 ? ev : i("vocab_size"))) {
    return Error{"bos_token must be a valid token id (below the embedding vocabulary)",
                 "bos_token"};
  }
  if (c.at("tie_embeddings").get<bool>() && ev != 0 && ev != i("vocab_size")) {
    return Error{"tie_embeddings needs embed_vocab_size 0 or equal to vocab_size",
                 "tie_embeddings"};
  }
  return Status();
}

}  // namespace

std::string_view KnobTypeName(KnobType type) {
  switch (type) {
    case KnobType::kInt: return "int";
    case KnobType::kFloat: return "float";
    case KnobType::kBool: return "bool";
    case KnobType::kChoice: return "choice";
    case KnobType::kIntList: return "int list";
    case KnobType::kFloatList: return "float list";
  }
  return "?";
}

const KnobSpec* FindKnob(std::string_view name) {
  for (const KnobSpec& k : AllKnobs()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

std::vector<std::string> ClosestKnobNames(std::string_view name, size_t limit) {
  std::vector<std::pair<size_t, std::string_view>> scored;
  for (const KnobSpec& k : AllKnobs()) {
    size_t d = EditDistance(name, k.name);
    // A suffix match ("lr" -> "muon.lr") counts as close even when the edit distance is large.
    bool part = k.name.size() > name.size() && k.name.ends_with(std::string(".") + std::string(name));
    if (part) d = 1;
    if (d <= std::max<size_t>(2, k.name.size() / 3)) scored.push_back({d, k.name});
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < limit; ++i) out.emplace_back(scored[i].second);
  return out;
}

Result<J> ValidateKnobValue(const KnobSpec& k, const J& v) {
  switch (k.type) {
    case KnobType::kInt: return ValidateInt(k, v);
    case KnobType::kFloat: {
      Result<double> d = Number(k, v);
      if (!d.ok()) return d.error();
      return J(*d);
    }
    case KnobType::kBool:
      if (!v.is_boolean()) return KnobError(k, "expected true or false, got " + Describe(v));
      return v;
    case KnobType::kChoice: {
      std::string all;
      for (std::string_view c : k.choices) {
        if (v.is_string() && v.get<std::string>() == c) return v;
        all += (all.empty() ? "" : ", ") + std::string(c);
      }
      return KnobError(k, "expected one of {" + all + "}, got " + Describe(v));
    }
    case KnobType::kIntList:
    case KnobType::kFloatList: return ValidateList(k, v);
  }
  return KnobError(k, "unsupported type");
}

Result<J> ParseKnobText(const KnobSpec& k, std::string_view text) {
  auto parse_number = [&](std::string_view t) -> Result<J> {
    std::string s(t);
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) {
      return KnobError(k, "cannot read '" + s + "' as a number");
    }
    return J(d);
  };
  if (k.type == KnobType::kBool) {
    if (text == "true" || text == "1" || text == "on") return J(true);
    if (text == "false" || text == "0" || text == "off") return J(false);
    return KnobError(k, "expected true or false, got '" + std::string(text) + "'");
  }
  if (k.type == KnobType::kChoice) return ValidateKnobValue(k, J(std::string(text)));
  if (k.type == KnobType::kIntList || k.type == KnobType::kFloatList) {
    J list = J::array();
    std::string_view rest = text;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      Result<J> n = parse_number(rest.substr(0, comma));
      if (!n.ok()) return n.error();
      list.push_back(*n);
      rest = comma == std::string_view::npos ? "" : rest.substr(comma + 1);
    }
    return ValidateKnobValue(k, list);
  }
  Result<J> n = parse_number(text);
  if (!n.ok()) return n.error();
  return ValidateKnobValue(k, *n);
}

Result<J> CanonicalizeConfig(const J& partial) {
  if (!partial.is_object()) return Error{"a config must be a JSON object of knobs", ""};
  J flat = J::object();
  Flatten(partial, "", &flat);
  J out = J::object();
  for (const KnobSpec& k : AllKnobs()) out[std::string(k.name)] = k.default_value;
  for (auto it = flat.begin(); it != flat.end(); ++it) {
    const KnobSpec* k = FindKnob(it.key());
    if (k == nullptr) return UnknownKnob(it.key());
    Result<J> v = ValidateKnobValue(*k, it.value());
    if (!v.ok()) return v.error();
    out[it.key()] = *v;
  }
  Status s = CheckCrossKnobRules(out);
  if (!s.ok()) return s.error();
  return out;
}

Result<J> ApplyOverrides(const J& canonical, const J& overrides) {
  if (!overrides.is_object()) return Error{"overrides must be an object of knobs", ""};
  J flat = J::object();
  Flatten(overrides, "", &flat);
  J merged = canonical;
  for (auto it = flat.begin(); it != flat.end(); ++it) {
    if (FindKnob(it.key()) == nullptr) return UnknownKnob(it.key());
    merged[it.key()] = it.value();
  }
  return CanonicalizeConfig(merged);
}

std::string CanonicalJson(const J& canonical) { return canonical.dump(); }

std::string ConfigHash(const J& canonical) {
  J without_seed = canonical;
  without_seed.erase("seed");
  return Sha256Hex(CanonicalJson(without_seed));
}

std::string KnobSchemaFingerprint() {
  std::string text;
  for (const KnobSpec& k : AllKnobs()) {
    text += std::string(k.name) + "|" + std::string(KnobTypeName(k.type)) + "|" +
            k.default_value.dump() + "|" + J(k.min).dump() + "|" + J(k.max).dump() + "\n";
  }
  return Sha256Hex(text).substr(0, 12);
}

J ConfigDiff(const J& from, const J& to) {
  J diff = J::object();
  for (auto it = to.begin(); it != to.end(); ++it) {
    auto f = from.find(it.key());
    if (f == from.end() || *f != it.value()) {
      diff[it.key()] = {{"from", f == from.end() ? J() : *f}, {"to", it.value()}};
    }
  }
  return diff;
}

}  // namespace ablate
