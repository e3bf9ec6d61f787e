#pragma once
// How unevenly a workload's tokens spread over one mixture-of-experts layer's experts.
//
// Terms:
//   share_i   expert i's fraction of the layer's routing mass (selections of i / all selections);
//             uniform routing gives 1/E each.
//   weight_i  E · share_i: 1 for uniform routing, mean 1 always.
//   load CV   the coefficient of variation of the weights across the layer's experts (model spec
//             field "expert_load_cv"); 0 is uniform routing.
//
// Model: the E weights are the E mid-quantiles (i − ½)/E, i = 1..E, of a Gamma distribution of
// mean 1 and coefficient of variation cv (shape 1/cv²), renormalised to mean exactly 1 — a
// deterministic popularity profile with one parameter. A token selects expert i with probability
// q_i = min(1, k · weight_i / E) (k experts per token; exactly k/E each when uniform).
//
// The parameter is fitted per model to published routing statistics, in the measures
// routing_statistics computes (those of llama.cpp's per-expert selection counts as routing
// analyses report them): the concentration 1 − H(share)/ln E, the experts that carry 90% of the
// mass hottest-first, and the hottest expert's share.
#include <vector>

namespace specdec::sim {

// Largest load CV a spec may give (Gamma shape 1/16: a handful of experts take most tokens).
inline constexpr double kMaxExpertLoadCv = 4.0;

// The E weights for `cv` in ascending order (coldest first), mean 1. Computed once per (E, cv) and
// kept: sweeps price millions of forwards. cv must be in [0, kMaxExpertLoadCv], experts in [1, 4096].
const std::vector<double>& expert_popularity(int experts, double cv);

// The published routing measures of a layer whose experts have `weights` (mean 1).
struct RoutingStatistics {
  double concentration = 0;       // 1 − H(share) / ln E: 0 uniform, 1 one expert
  int experts_for_coverage = 0;   // fewest experts, hottest first, holding `coverage` of the mass
  double top_share = 0;           // the hottest expert's share
};
RoutingStatistics routing_statistics(const std::vector<double>& weights, double coverage = 0.9);

}  // namespace specdec::sim
