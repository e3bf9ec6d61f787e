#include "simulator/policy_mode.hpp"

#include <cmath>
#include <cstdint>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/policies/registry.hpp"
#include "simulator/method.hpp"
#include "simulator/prediction_json.hpp"

namespace specdec::sim {

PolicyModeResult run_policy_mode(const ScenarioOptions& o, const Scenario& s, const PolicyModeOptions& p,
                                 const OptionSpelling& sp) {
  if (p.policy && p.recommend) throw Error("give " + sp("policy", "SPEC") + " or " + sp("recommend-policy") + ", not both");
  if (!p.policy && !p.recommend) throw Error("give " + sp("policy", "SPEC") + " or " + sp("recommend-policy"));
  const std::string mode = p.policy ? sp("policy") : sp("recommend-policy");
  const bool capacity_rate = o.capacity && o.capacity->capacity_rate, tpot_target = o.capacity && o.capacity->tpot_target_ms;
  for (const auto& [option, given] :
       {std::pair{"best-k", o.best_k.has_value()}, std::pair{"best-tree", o.best_tree.has_value()},
        std::pair{"tree", o.tree.has_value()}, std::pair{"dynamic-tree", o.dynamic_tree.has_value()},
        std::pair{"al", o.al.has_value()}, std::pair{"batching", o.batching.has_value()},
        std::pair{"capacity-rate", capacity_rate}, std::pair{"tpot-target-ms", tpot_target}, std::pair{"breakdown", o.breakdown}})
    if (given)
      throw Error(mode + " prices a policy over chains of depth up to " + sp("k") +
                  " under per-position acceptance; it cannot be combined with " + sp(option));
  if (p.batches.empty()) throw Error(sp("batch") + ": no batch size given");
  if (p.recommend && p.batches.size() > 1)
    throw Error(mode + ": give one " + sp("batch") + " (a list of batch sizes is for " + sp("policy", "SPEC") + ")");
  for (const int b : p.batches) {
    check_input_limit(sp("batch"), "the batch size", b, kMaxSimulatedBatch);
    if (b < 1) throw Error(sp("batch") + ": the batch size must be >= 1, got " + std::to_string(b));
  }
  PolicyModeResult r;
  r.scenario = s;
  r.batches = p.batches;
  PolicyPricingOptions& opt = r.pricing;
  if (p.steps < 100) throw Error(sp("policy-steps") + ": at least 100 steps, got " + std::to_string(p.steps));
  if (p.steps > 100000000) throw Error(sp("policy-steps") + ": at most 100000000 steps, got " + std::to_string(p.steps));
  opt.steps = p.steps;
  opt.seed = static_cast<uint64_t>(static_cast<uint32_t>(p.seed));
  if (!(p.concentration > 0) || !std::isfinite(p.concentration))
    throw Error(sp("confidence-concentration") + ": must be a positive number");
  opt.concentration = p.concentration;
  std::optional<PolicySpec> spec;
  if (p.policy) {
    spec = parse_policy_spec(*p.policy, sp("policy"));
    try {
      (void)make_policy(*spec);  // the entry's own checks (vllm-batch's first range at batch size 1)
    } catch (const Error& e) {
      throw Error(sp("policy") + ": " + e.what());
    }
  }
  check_policy_scenario(s, sp);
  if (p.recommend) {
    r.recommendation = recommend_policy(s, opt);
    return r;
  }
  for (const int b : p.batches) {
    Scenario sb = s;
    sb.workload.batch = b;
    PolicyAtBatch row{b, price_policy(sb, *spec, opt), {}, price_fixed_depths(sb)};
    row.best = best_fixed_depth(row.fixed);
    r.by_batch.push_back(std::move(row));
  }
  return r;
}

nlohmann::json policy_mode_json(const PolicyModeResult& r) {
  const Scenario& s = r.scenario;
  nlohmann::json out;
  // The scenario as a prediction states it, with the method, its ceiling and every batch size priced.
  out["scenario"] = scenario_json(s);
  out["scenario"]["method"] = method_name(s.plan.method);
  out["scenario"]["max_depth"] = s.plan.k;
  out["scenario"]["batch"] = r.batches.size() == 1 ? nlohmann::json(r.batches.front()) : nlohmann::json(r.batches);
  if (r.recommendation) {
    out["recommendation"] = policy_recommendation_json(*r.recommendation);
    return out;
  }
  auto one = [](const PolicyAtBatch& a) {
    nlohmann::json j = {{"batch", a.batch}, {"policy_pricing", policy_pricing_json(a.priced)}, {"best_fixed", fixed_depth_json(a.best)}};
    for (const auto& f : a.fixed) j["fixed_by_k"].push_back(fixed_depth_json(f));
    return j;
  };
  if (r.by_batch.size() == 1) {
    out.update(one(r.by_batch.front()));
  } else {
    for (const auto& a : r.by_batch) out["by_batch"].push_back(one(a));
  }
  return out;
}

}  // namespace specdec::sim
