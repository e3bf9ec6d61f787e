#pragma once
// Summary statistics over the prompts of a cell: mean, sample standard deviation and the 95%
// confidence interval of the mean (Student's t with n − 1 degrees of freedom); and the per-prompt
// oracle over a fixed-K axis.
#include <vector>

#include <nlohmann/json.hpp>

namespace specdec::sweep {

struct MeanCI {
  int n = 0;
  double mean = 0, sd = 0;
  double ci_low = 0, ci_high = 0;  // equal to the mean when n < 2 (no spread to estimate)
};

MeanCI mean_ci(const std::vector<double>& values);

// The 0.975 quantile of Student's t with `df` degrees of freedom (df >= 1).
double t_quantile_975(int df);

// The per-prompt oracle over a fixed-K axis: for each group of chain cells with the fixed policy
// that differ only in K (same method, drafter, sampling, backend, concurrency; at least two Ks),
// each prompt's best K — the highest decode tokens/s among that prompt's rows of the group (ties:
// the smaller K) — and what that choice gives, averaged over the prompts that have a row at every
// K of the group. `cells` are the manifest's cells; `rows` the finished runs. One entry per group,
// in the order of the group's first cell:
//   {"method", "config" (the cells' config without "k"), "ks", "prompts",
//    "tokens_per_s", "acceptance_length", "target_forwards", "drafter_forwards", "k" (each
//    {n, mean, sd, ci95} over prompts of the chosen K's values),
//    "best_fixed": {"k", "tokens_per_s"} (the one K with the highest mean over the same prompts),
//    "chosen": [{"prompt_set", "prompt_id", "category", "k", "tokens_per_s"}, ...],
//    "k_histogram": {"K": prompts that chose it}}.
// Empty when the sweep has no such axis. The maximum of noisy timings is biased upward: with
// timing noise the oracle overstates what a rule could reach.
nlohmann::json fixed_k_oracle(const nlohmann::json& cells, const std::vector<nlohmann::json>& rows);
// {n, mean, sd, ci95: [low, high]} of `values` (as summary.json writes every metric).
nlohmann::json mean_ci_json(const std::vector<double>& values);

}  // namespace specdec::sweep
