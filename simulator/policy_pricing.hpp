#pragma once
// Pricing speculation policies (reference/policies): what a policy that chooses each step's draft
// depth would give — AL, the K it chooses, drafter forwards, step time, tokens/s and speedup — for
// a scenario's drafter/target pair on its hardware, and which policy to use.
//
// The real policy objects (make_policy) are driven through a synthetic acceptance process:
//   each step   plan({step, batch, max_depth}) → depth d; the drafter "drafts" up to d, asking the
//               policy's stop rule (when the plan enables it) before each draft (draft_at: false
//               stops without it, its drafter forward already paid) and after it (draft_after:
//               false stops after it) with a synthetic confidence; the drafts kept are verified
//               (none when fewer than the plan's min_drafts); observe(outcome).
//   acceptance  draft i (1-based) has the scenario's per-position conditional acceptance a_i
//               (AcceptanceModel::conditional(i, 0): P(draft i accepted | drafts < i accepted)).
//   ASSUMPTION  the drafter's confidence in draft i is c_i ~ Beta(κ·a_i, κ·(1 − a_i)) (mean a_i,
//               concentration κ, default 2) and draft i is accepted with probability c_i, so
//               E[accepted] = a_i exactly and the confidence is informative (a confident draft is
//               more likely accepted). Real drafters' confidences are calibrated differently; the
//               confidence-driven policies (hf-confidence, p-min, specdec++) are priced under this
//               model only. κ → ∞ makes the confidence a constant a_i (uninformative), κ → 0 makes
//               it 0 or 1 (perfectly informative). The synthetic draft is the drafter's top-1 token
//               (greedy drafting), so c_i is both its confidence and the top-1 probability.
//   sequences   a fresh policy object per simulated sequence of the workload's output_len tokens
//               (capped, see PolicyPricingOptions), sequences back to back until `steps` steps.
//   randomness  SplitMix64 keyed by (seed, sequence, step, draft): deterministic, and every policy
//               sees the same draws at the same (sequence, step, depth) (common random numbers,
//               so comparisons between policies are sharper than their standard errors suggest).
//   cost        a step that drafted g drafts and verified n of them costs draft(g) + verify(n):
//               the cost model's step at K = g split into its drafting part (drafter forwards and
//               their per-forward host time) and its verification part (target forward, sampling,
//               per-iteration overheads); n = 0 is a plain target forward (sequential decoding's
//               step, no speculative overheads). P-EAGLE drafts all positions in one forward, so
//               its drafting costs the planned depth whatever the stop rule keeps.
//   batch       StepContext.batch_size is the workload's batch, so schedules by batch size
//               (trtllm, vllm-batch) take effect; every sequence is simulated alone and each step
//               is priced as if the whole batch drafted that sequence's depth (exact when all
//               sequences get the same depth — fixed, schedule, trtllm/vllm-batch schedules —
//               an approximation for per-sequence adaptive policies in a batch).
// The Monte Carlo standard errors are batch means over 50 blocks of consecutive steps.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/policies/policy_spec.hpp"
#include "simulator/option_spelling.hpp"
#include "simulator/predictor.hpp"

namespace specdec::sim {

struct PolicyPricingOptions {
  int steps = 20000;             // simulated decoding steps in all (at least 100)
  uint64_t seed = 1;
  double concentration = 2.0;    // κ of the confidence model (> 0)
  int sequence_tokens = 0;       // tokens per simulated sequence; 0: the workload's output_len, at most 2048
};

// One synthetic draft at (sequence, step, depth) of conditional acceptance a: its confidence
// c ~ Beta(κa, κ(1 − a)) and whether the target accepts it (probability c). Keyed by position
// alone (SplitMix64), so every policy sees the same draws.
struct SyntheticDraft {
  double confidence = 0;
  bool accepted = false;
};
SyntheticDraft synthetic_draft(uint64_t seed, int sequence, int step, int depth, double a, double kappa);

// The step costs a policy is priced with, by depth (index 0..max_depth).
struct PolicyStepCosts {
  int max_depth = 0;
  std::vector<double> draft_s;        // drafting g drafts ([0] = 0)
  std::vector<double> verify_s;       // verifying n drafts ([0] = a plain target forward)
  std::vector<int> draft_forwards;    // drafter forwards for g drafts
  double plain_s = 0;                 // sequential decoding's step (= verify_s[0])
};

// The scenario's per-position conditional acceptance a_1..a_max_depth; throws when the acceptance
// data does not give one (a measured AL alone, a table without every K up to max_depth), naming
// options as `spelling` writes them.
std::vector<double> per_position_acceptance(const Scenario& s, int max_depth,
                                            const OptionSpelling& spelling = kCommandLineSpelling);
// Throws unless policies can be priced for the scenario (a drafter's chain of depth up to s.plan.k,
// per-position acceptance up to it), naming options as `spelling` writes them. The pricing
// functions below check the same, in the command line's words.
void check_policy_scenario(const Scenario& s, const OptionSpelling& spelling);
// Step costs of the scenario's chain method at depths 0..s.plan.k (its batch, mean context).
PolicyStepCosts policy_step_costs(const Scenario& s, const std::vector<double>& rates);

struct PolicyPricing {
  PolicySpec policy;       // normalized
  std::string label;       // PolicySpec::label()
  int batch = 1;
  int max_depth = 0;       // the method's K: the policies' ceiling
  int steps = 0, sequences = 0, sequence_tokens = 0;
  uint64_t seed = 0;
  double concentration = 0;
  double tokens_per_step = 1;      // AL, counting the bonus token
  double tokens_per_step_se = 0;   // its Monte Carlo standard error
  double mean_k = 0;               // the depth planned (after clamping to max_depth)
  double mean_drafted = 0;         // drafts verified per step (after stop rules, drops, n_min)
  std::vector<double> k_histogram;        // fraction of steps planning K = 0..max_depth
  std::vector<double> drafted_histogram;  // fraction of steps verifying n = 0..max_depth drafts
  double acceptance_rate = 0;      // accepted / drafted over the drafted steps (0 when none)
  double drafter_forwards_per_step = 0;
  double draft_s = 0, verify_s = 0;  // mean per step
  double step_s = 0;               // mean step time
  double tpot_s = 0;               // Σ time / Σ tokens
  double throughput_tokens_per_s = 0;  // batch / TPOT, per replica
  double sequential_tpot_s = 0;    // plain decoding at the same batch
  double speedup = 1;
  double speedup_se = 0;
};

// A chain of fixed K priced in closed form (AL = 1 + Σ_{i≤K} Π_{j≤i} a_j) with the same costs.
struct FixedDepthPricing {
  int k = 0;
  double tokens_per_step = 1;
  double step_s = 0, tpot_s = 0, throughput_tokens_per_s = 0, speedup = 1;
  int drafter_forwards = 0;
};

// Prices `policy` for the scenario: a speculative chain method (s.plan.k = the policies' ceiling)
// with an acceptance model that gives per-position rates up to it. Throws specdec::Error naming
// what is missing.
PolicyPricing price_policy(const Scenario& s, const PolicySpec& policy, const PolicyPricingOptions& options = {});
// Fixed K = 0..s.plan.k in closed form (K = 0: plain decoding).
std::vector<FixedDepthPricing> price_fixed_depths(const Scenario& s);
// The fastest of price_fixed_depths (lowest TPOT; ties: the smaller K).
FixedDepthPricing best_fixed_depth(const std::vector<FixedDepthPricing>& fixed);

// The goodput policy with this scenario's costs: its cost(K) = 1 + c_verify + K·c_draft (in plain
// target forwards) fitted by least squares to this scenario's step(K) / plain step at K = 1..max_depth
// (so at large batches the growth of verification with K is folded into c_draft); 3 significant digits.
PolicySpec goodput_for_scenario(const Scenario& s);

struct PolicyRankingRow {
  std::string label;          // a policy's label, or "fixed K=k (closed form)"
  bool closed_form = false;   // the best fixed K, priced exactly (no Monte Carlo error)
  bool scenario_costs = false;  // goodput with this scenario's costs (not a registry default)
  double tokens_per_step = 1, tokens_per_step_se = 0, mean_k = 0, mean_drafted = 0, drafter_forwards_per_step = 0;
  double tpot_s = 0, throughput_tokens_per_s = 0, speedup = 1, speedup_se = 0;
};

struct PolicyRecommendation {
  std::vector<PolicyPricing> policies;   // every registered policy with its defaults, registry order,
                                         // then goodput with this scenario's costs
  std::vector<FixedDepthPricing> fixed;  // K = 0..max_depth, closed form
  FixedDepthPricing best_fixed;
  std::vector<PolicyRankingRow> ranking;  // fastest first (TPOT; ties keep the order above)
  std::string recommended;                // ranking[0].label
  // Whether ranking[0] beats ranking[1] by more than 2 combined standard errors of speedup.
  bool clear_winner = false;
};

PolicyRecommendation recommend_policy(const Scenario& s, const PolicyPricingOptions& options = {});

nlohmann::json policy_pricing_json(const PolicyPricing& p);
nlohmann::json fixed_depth_json(const FixedDepthPricing& f);
nlohmann::json policy_recommendation_json(const PolicyRecommendation& r);

}  // namespace specdec::sim
