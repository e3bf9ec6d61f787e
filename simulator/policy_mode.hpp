#pragma once
// `specdec simulate --policy SPEC` / `--recommend-policy` and Python's specdec.simulate_policy /
// specdec.recommend_policy: which options go with pricing speculation policies, the pricing itself
// (simulator/policy_pricing: one policy at each batch size beside every fixed K, or every policy
// ranked), and the JSON both return. Errors name options as the caller spells them.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "simulator/option_spelling.hpp"
#include "simulator/policy_pricing.hpp"
#include "simulator/scenario_options.hpp"

namespace specdec::sim {

struct PolicyModeOptions {
  std::optional<std::string> policy;  // NAME[,key=value...]: price this policy
  bool recommend = false;             // rank every registered policy
  std::vector<int> batches = {1};     // the policy's batch sizes (recommend: one)
  int steps = PolicyPricingOptions{}.steps;
  int seed = 1;                       // as a 32-bit unsigned value
  double concentration = PolicyPricingOptions{}.concentration;
};

// The policy priced at one batch size, beside every fixed K (closed form) and the best of them.
struct PolicyAtBatch {
  int batch = 1;
  PolicyPricing priced;
  FixedDepthPricing best;
  std::vector<FixedDepthPricing> fixed;
};

struct PolicyModeResult {
  Scenario scenario;                                  // at the first batch size
  std::vector<int> batches;
  PolicyPricingOptions pricing;
  std::optional<PolicyRecommendation> recommendation;  // recommend
  std::vector<PolicyAtBatch> by_batch;                 // policy: one per batch size
};

// Checks that the options go together (one of policy and recommend; a policy prices chains of
// depth up to k under per-position acceptance, so no search, tree, measured AL, batching, capacity
// planning or breakdown; recommend at one batch size; steps and concentration in range; the policy
// known and its parameters valid; the scenario one a policy can be priced for), then prices. `s` is
// the scenario built from `o` at the first batch size.
PolicyModeResult run_policy_mode(const ScenarioOptions& o, const Scenario& s, const PolicyModeOptions& p,
                                 const OptionSpelling& spelling);

// `--json`'s answer: "scenario" (model, hardware, engine, drafter, method, max_depth, batch, tp,
// lengths, acceptance), then "recommendation", or the policy's "batch", "policy_pricing",
// "best_fixed", "fixed_by_k" (several batch sizes: "by_batch", a list of those).
nlohmann::json policy_mode_json(const PolicyModeResult& r);

}  // namespace specdec::sim
