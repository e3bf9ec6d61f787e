#include "simulator/simulate_modes.hpp"

#include "reference/core/error.hpp"
#include "simulator/prediction_json.hpp"

namespace specdec::sim {

SimulateResult simulate_modes(const ScenarioOptions& o, BuiltScenario built, const OptionSpelling& sp) {
  if (o.best_k && o.best_tree)
    throw Error("give " + sp("best-k") + " (chains) or " + sp("best-tree") + " (EAGLE-2 trees), not both");
  if (o.batching && (o.best_k || o.best_tree))
    throw Error(sp("batching") + " evaluates one configuration: give " + sp.list({"k", "tree", "dynamic-tree"}) +
                " rather than a search");
  const std::optional<Batching> batching =
      o.batching ? std::optional<Batching>(parse_batching(*o.batching, sp("batching"))) : std::nullopt;
  for (const char* search : {"best-k", "best-tree"}) {
    const bool given = std::string(search) == "best-k" ? o.best_k.has_value() : o.best_tree.has_value();
    if (given && (o.tree || o.dynamic_tree || o.al))
      throw Error(sp(search) + " searches draft shapes under an acceptance model; it cannot be combined with " +
                  (o.al ? sp("al") + " (a measured AL belongs to the one configuration it was measured with)"
                        : sp("tree") + " or " + sp("dynamic-tree")));
  }

  SimulateResult r{std::move(built), {}, {}, {}, {}};
  Scenario& s = r.built.scenario;
  if (o.best_k) {
    r.best_k = best_k(s, *o.best_k);
    r.prediction = r.best_k->best;
    s.plan.k = r.best_k->k;
  } else if (o.best_tree) {
    const BestTreeGrid& g = *o.best_tree;
    r.best_tree = best_dynamic_tree(s, g.total_tokens, g.depths, g.top_ks);
    r.prediction = r.best_tree->best;
    s.plan.tree = r.best_tree->tree;
    s.plan.dynamic_depth = r.best_tree->setting.depth;
    s.plan.dynamic_top_k = r.best_tree->setting.top_k;
  } else {
    r.prediction = predict(s);
  }
  if (batching) r.batching = predict_batching(s, *batching);
  return r;
}

nlohmann::json simulate_json(const SimulateResult& r, bool breakdown) {
  nlohmann::json out;
  auto skipped = [&](const std::vector<SkippedSetting>& list) {
    out["skipped"] = nlohmann::json::array();
    for (const auto& k : list) out["skipped"].push_back({{"setting", k.setting}, {"reason", k.reason}});
  };
  if (r.best_k) {
    out["best_k"] = r.best_k->k;
    for (const auto& q : r.best_k->all) out["by_k"].push_back(prediction_json(q, false));
    skipped(r.best_k->skipped);
  } else if (r.best_tree) {
    const BestTree& b = *r.best_tree;
    out["best_tree"] = {{"total_tokens", b.setting.total_tokens}, {"depth", b.setting.depth}, {"top_k", b.setting.top_k}};
    for (const auto& c : b.all) {
      nlohmann::json row = prediction_json(c.prediction, false);
      row["total_tokens"] = c.setting.total_tokens;
      row["depth"] = c.setting.depth;
      row["top_k"] = c.setting.top_k;
      out["by_tree"].push_back(row);
    }
    skipped(b.skipped);
  }
  const BuiltScenario& built = r.built;
  out["scenario"] = scenario_json(built.scenario);
  if (!built.category.empty()) out["scenario"]["category"] = built.category;
  if (built.category_default) out["scenario"]["category_default"] = true;
  if (!built.measured_note.empty()) out["scenario"]["acceptance"] = built.measured_note;
  if (!built.k_note.empty()) out["scenario"]["k_note"] = built.k_note;
  out["prediction"] = prediction_json(r.prediction, breakdown);
  if (r.batching) {
    const BatchingPrediction& b = *r.batching;
    out["batching"] = {{"mode", batching_name(b.mode)},
                       {"sequences", b.sequences},
                       {"tokens_per_step", b.tokens_per_step},
                       {"tokens_per_step_sd", b.tokens_per_step_sd},
                       {"step_ms", b.step_s * 1e3},
                       {"prefill_per_step_ms", b.prefill_per_step_s * 1e3},
                       {"steps", b.steps},
                       {"ragged_factor", b.ragged_factor},
                       {"tpot_ms", b.tpot_s * 1e3},
                       {"throughput_tokens_per_s", b.throughput_tokens_per_s},
                       {"sequential_tpot_ms", b.sequential_tpot_s * 1e3},
                       {"sequential_throughput_tokens_per_s", b.sequential_throughput_tokens_per_s},
                       {"speedup", b.speedup}};
  }
  return out;
}

}  // namespace specdec::sim
