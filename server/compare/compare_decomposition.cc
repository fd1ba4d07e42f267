// Finds the roles of a decomposition's variants, runs the statistics and fills the message.
#include "server/compare/compare_decomposition.h"

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/stats/decomposition.h"
#include "common/stats/sample_stats.h"
#include "server/stats/verdict.h"

namespace ablate {
namespace {

using J = nlohmann::json;

constexpr char kMethod[] =
    "FROM is the baseline. add-one-in = mean(FROM + change) - mean(FROM): the change alone; "
    "leave-one-out = mean(TO) - mean(TO - change): what it still does beside the others. Each is "
    "a Welch t-test with a 95% CI, Holm-corrected per metric across the table's tests; negative "
    "is faster. Time to target splits into steps to target x ms/step. interaction = (TO - FROM) - "
    "sum of the add-one-in effects, a linear contrast with its 95% CI (Welch-Satterthwaite): 0 "
    "when the parts add up, negative when together the changes save more than their parts. Runs "
    "that never reached the target are left out of time and steps, as in the variant table.";

// Which runs play which role, by change name.
struct Roles {
  std::vector<std::string> changes;
  const VariantOutcomes* to = nullptr;
  std::map<std::string, const VariantOutcomes*> add, drop;
};

std::optional<Roles> FindRoles(std::span<const VariantOutcomes> ablations) {
  Roles roles;
  for (const VariantOutcomes& v : ablations) {
    const J diff = J::parse(v.variant->diff_json, nullptr, false);
    const J* d = diff.is_object() && diff.contains("script") && diff["script"].is_object() &&
                         diff["script"].contains("decompose")
                     ? &diff["script"]["decompose"]
                     : nullptr;
    if (!d || !d->is_object() || !d->value("all", J()).is_array()) continue;
    if (roles.changes.empty()) roles.changes = (*d)["all"].get<std::vector<std::string>>();
    for (const J& role : d->value("roles", J::array())) {
      if (!role.is_string()) continue;
      const std::string r = role.get<std::string>();
      if (r == "to") roles.to = &v;
      if (r.starts_with("add-")) roles.add[r.substr(4)] = &v;
      if (r.starts_with("drop-")) roles.drop[r.substr(5)] = &v;
    }
  }
  if (roles.changes.empty() || !roles.to) return std::nullopt;
  for (const std::string& c : roles.changes) {
    if (!roles.add.count(c)) return std::nullopt;
  }
  return roles;
}

// `variant` - `reference`, as the variant table's deltas.
void FillDelta(const MetricComparison& c, std::span<const RunOutcome> variant,
               std::span<const RunOutcome> reference, Metric metric, v1::MetricDelta* out) {
  if (c.difference) {
    out->set_difference(*c.difference);
    const std::vector<double> ref = MetricValues(reference, metric);
    if (!ref.empty() && SampleMean(ref) != 0.0) out->set_relative(*c.difference / SampleMean(ref));
  }
  if (c.welch) {
    out->set_ci_low(c.welch->difference - c.welch->ci_half_width);
    out->set_ci_high(c.welch->difference + c.welch->ci_half_width);
    out->mutable_welch()->set_t(c.welch->t);
    out->mutable_welch()->set_df(c.welch->df);
    out->mutable_welch()->set_p_value(c.welch->p_value);
  }
  if (c.welch_p_holm) out->set_p_holm(*c.welch_p_holm);
  if (c.paired) {
    out->mutable_paired()->set_t(c.paired->t);
    out->mutable_paired()->set_df(c.paired->df);
    out->mutable_paired()->set_p_value(c.paired->p_value);
  }
  out->set_underpowered(c.underpowered);
  out->set_verdict(MetricVerdict(c, metric, SummarizeVariant(variant)));
}

void FillInteraction(const MetricDecomposition& d, v1::DecompositionInteraction* out) {
  if (d.total) out->set_total(*d.total);
  if (d.sum_of_singles) out->set_sum_of_singles(*d.sum_of_singles);
  if (d.total && d.sum_of_singles) out->set_interaction(*d.total - *d.sum_of_singles);
  if (d.interaction) {
    out->set_ci_low(d.interaction->difference - d.interaction->ci_half_width);
    out->set_ci_high(d.interaction->difference + d.interaction->ci_half_width);
    out->mutable_test()->set_t(d.interaction->t);
    out->mutable_test()->set_df(d.interaction->df);
    out->mutable_test()->set_p_value(d.interaction->p_value);
  }
  out->set_underpowered(d.interaction_underpowered);
}

v1::DecompositionEffect* EffectOf(v1::DecompositionChange* c, Metric m) {
  if (m == Metric::kStepsToTarget) return c->mutable_steps_to_target();
  if (m == Metric::kMsPerStep) return c->mutable_mean_step_ms();
  return c->mutable_time_to_target_ms();
}

v1::DecompositionInteraction* InteractionOf(v1::Decomposition* d, Metric m) {
  if (m == Metric::kStepsToTarget) return d->mutable_steps_to_target();
  if (m == Metric::kMsPerStep) return d->mutable_mean_step_ms();
  return d->mutable_time_to_target_ms();
}

}  // namespace

void FillDecomposition(const VariantOutcomes* baseline, std::span<const VariantOutcomes> ablations,
                       v1::CompareSweepResponse* out) {
  if (!baseline) return;
  std::optional<Roles> roles = FindRoles(ablations);
  if (!roles) return;
  DecompositionRuns runs{baseline->outcomes, roles->to->outcomes, {}, {}};
  for (const std::string& c : roles->changes) {
    runs.add_one_in.push_back(roles->add.at(c)->outcomes);
    // One change: TO - change is FROM.
    auto drop = roles->drop.find(c);
    runs.leave_one_out.push_back(drop == roles->drop.end() ? baseline->outcomes
                                                           : drop->second->outcomes);
  }
  const std::vector<MetricDecomposition> stats = Decompose(runs);
  v1::Decomposition* d = out->mutable_decomposition();
  d->set_to_variant(roles->to->variant->name);
  d->set_method(kMethod);
  for (size_t i = 0; i < roles->changes.size(); ++i) {
    const std::string& name = roles->changes[i];
    v1::DecompositionChange* c = d->add_changes();
    c->set_name(name);
    c->set_add_variant(roles->add.at(name)->variant->name);
    if (auto it = roles->drop.find(name); it != roles->drop.end()) {
      c->set_drop_variant(it->second->variant->name);
    }
    for (const MetricDecomposition& m : stats) {
      v1::DecompositionEffect* e = EffectOf(c, m.metric);
      FillDelta(m.add_one_in[i], runs.add_one_in[i], runs.from, m.metric,
                e->mutable_add_one_in());
      FillDelta(m.leave_one_out[i], runs.to, runs.leave_one_out[i], m.metric,
                e->mutable_leave_one_out());
    }
  }
  for (const MetricDecomposition& m : stats) FillInteraction(m, InteractionOf(d, m.metric));
}

}  // namespace ablate
