#include "experiments/sweep/cell_summary.hpp"

#include <cmath>
#include <map>
#include <string>

namespace specdec::sweep {

double t_quantile_975(int df) {
  // Exact to three decimals up to 30 degrees of freedom; beyond, the Cornish-Fisher expansion
  // around the normal quantile (error < 1e-4 for df > 30).
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df <= 30) return table[df < 1 ? 0 : df - 1];
  const double z = 1.959964, n = df;
  return z + (z * z * z + z) / (4 * n) + (5 * std::pow(z, 5) + 16 * z * z * z + 3 * z) / (96 * n * n);
}

MeanCI mean_ci(const std::vector<double>& v) {
  MeanCI r;
  r.n = static_cast<int>(v.size());
  if (v.empty()) return r;
  double sum = 0;
  for (double x : v) sum += x;
  r.mean = sum / r.n;
  r.ci_low = r.ci_high = r.mean;
  if (r.n < 2) return r;
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.sd = std::sqrt(ss / (r.n - 1));
  const double half = t_quantile_975(r.n - 1) * r.sd / std::sqrt(static_cast<double>(r.n));
  r.ci_low = r.mean - half;
  r.ci_high = r.mean + half;
  return r;
}

nlohmann::json mean_ci_json(const std::vector<double>& values) {
  const MeanCI m = mean_ci(values);
  return {{"n", m.n}, {"mean", m.mean}, {"sd", m.sd}, {"ci95", {m.ci_low, m.ci_high}}};
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
