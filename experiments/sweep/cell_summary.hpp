#pragma once
// Summary statistics over the prompts of a cell: mean, sample standard deviation and a 95%
// interval of the mean that is honest at the small n sweeps have:
//   - no interval at n = 1 (and no standard deviation): one prompt says nothing about spread;
//   - a percentile bootstrap (kBootstrapResamples resamples of the prompts with replacement, a
//     fixed SplitMix64 stream): every resampled mean is a mean of observed values, so the interval
//     lies inside [min, max] of the values and never leaves the quantity's range (no acceptance
//     length below 1, no negative tokens/s), where a Student-t interval at n = 2 reaches far past it;
//   - below kFewPrompts prompts the interval is flagged: a bootstrap of 2–4 values covers less than
//     its nominal 95%.
// analysis/sweep_results.py computes the same interval bit for bit (the plots group rows their own
// way); tests/python/test_figures.py checks the two agree.
#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

namespace specdec::sweep {

inline constexpr int kBootstrapResamples = 2000;
inline constexpr uint64_t kBootstrapSeed = 0;
inline constexpr int kFewPrompts = 5;

struct MeanCI {
  int n = 0;
  double mean = 0;
  std::optional<double> sd;                        // n >= 2
  std::optional<std::pair<double, double>> ci95;  // n >= 2: [low, high]
  bool few() const { return n < kFewPrompts; }
};

MeanCI mean_ci(const std::vector<double>& values);

// What summary.json says about its intervals, once (the "statistics" field).
nlohmann::json interval_description();

// The per-prompt oracle over a fixed-K axis: for each group of chain cells with the fixed policy
// that differ only in K (same method, drafter, sampling, backend, concurrency; at least two Ks),
// each prompt's best K — the highest decode tokens/s among that prompt's rows of the group (ties:
// the smaller K) — and what that choice gives, averaged over the prompts that have a row at every
// K of the group. `cells` are the manifest's cells; `rows` the finished runs. One entry per group,
// in the order of the group's first cell:
//   {"method", "config" (the cells' config without "k"), "ks", "prompts",
//    "tokens_per_s", "acceptance_length", "target_forwards", "drafter_forwards", "k" (each
//    mean_ci_json over prompts of the chosen K's values),
//    "best_fixed": {"k", "tokens_per_s"} (the one K with the highest mean over the same prompts),
//    "chosen": [{"prompt_set", "prompt_id", "category", "k", "tokens_per_s"}, ...],
//    "k_histogram": {"K": prompts that chose it}}.
// Empty when the sweep has no such axis. The maximum of noisy timings is biased upward: with
// timing noise the oracle overstates what a rule could reach.
nlohmann::json fixed_k_oracle(const nlohmann::json& cells, const std::vector<nlohmann::json>& rows);
// {n, mean, sd, ci95: [low, high]} of `values` (as summary.json writes every metric); sd and ci95
// are null below two values, and "few": true marks n < kFewPrompts.
nlohmann::json mean_ci_json(const std::vector<double>& values);

}  // namespace specdec::sweep
