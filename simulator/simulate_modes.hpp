#pragma once
// What `specdec simulate` and Python's specdec.simulate compute for one scenario beyond building
// it: the best K or the best EAGLE-2 tree (simulator/search) or the one prediction, and batching;
// and the JSON both return. Capacity planning is simulator/capacity_planning's.
#include <nlohmann/json.hpp>
#include <optional>

#include "simulator/batching.hpp"
#include "simulator/option_spelling.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/search.hpp"

namespace specdec::sim {

struct SimulateResult {
  BuiltScenario built;                         // K or tree set to a search's best
  Prediction prediction;                       // of that configuration
  std::optional<BestK> best_k;                 // with o.best_k
  std::optional<BestTree> best_tree;           // with o.best_tree
  std::optional<BatchingPrediction> batching;  // with o.batching
};

// Checks that the modes asked for go together (one search; batching and capacity planning price
// one configuration; a search needs an acceptance model, not a given shape or a measured AL),
// then runs them. Errors name options as `spelling` writes them.
SimulateResult simulate_modes(const ScenarioOptions& o, BuiltScenario built, const OptionSpelling& spelling);

// {"scenario", "prediction"} (with the per-operator breakdown when asked), the search's "best_k"
// and "by_k" or "best_tree" and "by_tree" with "skipped", and "batching": `simulate --json`.
nlohmann::json simulate_json(const SimulateResult& r, bool breakdown);

}  // namespace specdec::sim
