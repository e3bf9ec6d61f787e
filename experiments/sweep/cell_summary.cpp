#include "experiments/sweep/cell_summary.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace specdec::sweep {

namespace {

// SplitMix64 (Steele, Lea and Flood 2014): a tiny generator whose stream is the same everywhere,
// so a summary is reproducible and Python can draw the same resamples.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// An index in [0, n): the high 64 bits of draw × n (Lemire's multiply-shift, no modulo bias to speak of).
size_t draw_index(uint64_t& state, size_t n) {
  return static_cast<size_t>((static_cast<unsigned __int128>(splitmix64(state)) * n) >> 64);
}

}  // namespace

MeanCI mean_ci(const std::vector<double>& v) {
  MeanCI r;
  r.n = static_cast<int>(v.size());
  if (v.empty()) return r;
  double sum = 0;
  for (double x : v) sum += x;
  r.mean = sum / r.n;
  if (r.n < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.sd = std::sqrt(ss / (r.n - 1));
  // Percentile bootstrap: the 2.5% and 97.5% points of the means of resampled prompt sets.
  std::vector<double> means(kBootstrapResamples);
  uint64_t state = kBootstrapSeed;
  for (double& m : means) {
    double s = 0;
    for (int i = 0; i < r.n; ++i) s += v[draw_index(state, v.size())];
    m = s / r.n;
  }
  std::sort(means.begin(), means.end());
  const int tail = kBootstrapResamples / 40;  // 2.5%
  // A mean of equal values can round one ulp past them: the interval is held to the values' range.
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  r.ci95 = std::make_pair(std::max(means[tail], *lo), std::min(means[kBootstrapResamples - 1 - tail], *hi));
  return r;
}

nlohmann::json interval_description() {
  return {{"interval", "95% percentile bootstrap of the mean over prompts"},
          {"resamples", kBootstrapResamples},
          {"generator", "SplitMix64, seed " + std::to_string(kBootstrapSeed)},
          {"none_below", 2},
          {"few_below", kFewPrompts},
          {"note", "no interval (and no sd) at n = 1; intervals at n < " + std::to_string(kFewPrompts) +
                       " are flagged \"few\": a bootstrap of so few values covers less than 95%"}};
}

nlohmann::json mean_ci_json(const std::vector<double>& values) {
  const MeanCI m = mean_ci(values);
  nlohmann::json j = {{"n", m.n}, {"mean", m.mean}, {"sd", nullptr}, {"ci95", nullptr}};
  if (m.sd) j["sd"] = *m.sd;
  if (m.ci95) j["ci95"] = {m.ci95->first, m.ci95->second};
  if (m.few()) j["few"] = true;
  return j;
}

namespace {

using json = nlohmann::json;

struct OracleGroup {
  json config;                    // without "k"
  std::map<int, int64_t> cells;   // K -> cell index
};

std::string prompt_key(const json& row) {
  return row.value("prompt_set", std::string()) + "/" + row.value("prompt_id", std::string());
}

double row_tokens_per_s(const json& row) {
  const json::json_pointer ptr("/timing/tokens_per_s");
  return row.contains(ptr) && row[ptr].is_number() ? row[ptr].get<double>() : std::nan("");
}

double number_or_nan(const json& row, const char* field) {
  return row.contains(field) && row[field].is_number() ? row[field].get<double>() : std::nan("");
}

}  // namespace

json fixed_k_oracle(const json& cells, const std::vector<json>& rows) {
  // Groups of fixed-policy chain cells that differ only in K, in the order of their first cell.
  std::vector<OracleGroup> groups;
  std::map<std::string, std::size_t> group_of;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const json& c = cells[i];
    if (!c.is_object() || !c.contains("k") || !c["k"].is_number_integer() || c.contains("policy")) continue;
    json config = c;
    config.erase("k");
    const std::string key = config.dump();
    auto it = group_of.find(key);
    if (it == group_of.end()) {
      it = group_of.emplace(key, groups.size()).first;
      groups.push_back({config, {}});
    }
    groups[it->second].cells.emplace(c["k"].get<int>(), static_cast<int64_t>(i));
  }
  // Rows by cell, then prompt (in row order).
  std::map<int64_t, std::vector<const json*>> by_cell;
  for (const json& r : rows)
    if (r.contains("cell") && r["cell"].is_number_integer()) by_cell[r["cell"].get<int64_t>()].push_back(&r);

  json out = json::array();
  for (const OracleGroup& g : groups) {
    if (g.cells.size() < 2) continue;
    std::map<int, std::map<std::string, const json*>> at;  // K -> prompt -> row
    for (const auto& [k, cell] : g.cells)
      for (const json* r : by_cell[cell]) at[k][prompt_key(*r)] = r;
    std::vector<double> tps, al, target, drafter, chosen_k;
    std::map<int, std::vector<double>> per_k;  // K -> tokens/s of the prompts counted
    json chosen = json::array();
    std::map<int, int> histogram;
    for (const json* first : by_cell[g.cells.begin()->second]) {
      const std::string p = prompt_key(*first);
      bool complete = true;
      for (const auto& [k, _] : g.cells) {
        const auto r = at[k].find(p);
        complete = complete && r != at[k].end() && std::isfinite(row_tokens_per_s(*r->second));
      }
      if (!complete) continue;
      int best_k = 0;
      const json* best = nullptr;
      for (const auto& [k, _] : g.cells) {  // increasing K: a tie keeps the smaller
        const json* r = at[k][p];
        per_k[k].push_back(row_tokens_per_s(*r));
        if (!best || row_tokens_per_s(*r) > row_tokens_per_s(*best)) best = r, best_k = k;
      }
      tps.push_back(row_tokens_per_s(*best));
      al.push_back(number_or_nan(*best, "acceptance_length"));
      target.push_back(number_or_nan(*best, "target_forwards"));
      drafter.push_back(number_or_nan(*best, "drafter_forwards"));
      chosen_k.push_back(best_k);
      ++histogram[best_k];
      chosen.push_back({{"prompt_set", first->value("prompt_set", std::string())},
                        {"prompt_id", first->value("prompt_id", std::string())},
                        {"category", first->value("category", std::string())},
                        {"k", best_k},
                        {"tokens_per_s", row_tokens_per_s(*best)}});
    }
    if (tps.empty()) continue;
    json ks = json::array();
    for (const auto& [k, _] : g.cells) ks.push_back(k);
    int best_fixed = 0;
    double best_mean = -1;
    for (const auto& [k, v] : per_k) {
      const double m = mean_ci(v).mean;
      if (m > best_mean) best_mean = m, best_fixed = k;
    }
    json hist = json::object();
    for (const auto& [k, n] : histogram) hist[std::to_string(k)] = n;
    out.push_back({{"method", g.config.value("method", std::string())},
                   {"config", g.config},
                   {"ks", ks},
                   {"prompts", tps.size()},
                   {"tokens_per_s", mean_ci_json(tps)},
                   {"acceptance_length", mean_ci_json(al)},
                   {"target_forwards", mean_ci_json(target)},
                   {"drafter_forwards", mean_ci_json(drafter)},
                   {"k", mean_ci_json(chosen_k)},
                   {"best_fixed", {{"k", best_fixed}, {"tokens_per_s", best_mean}}},
                   {"k_histogram", hist},
                   {"chosen", chosen}});
  }
  return out;
}

}  // namespace specdec::sweep
