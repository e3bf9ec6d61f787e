#pragma once
// A prediction and its scenario as JSON: what `specdec simulate --json` prints under "prediction"
// and "scenario", written once for the command line and Python's specdec.simulate.
#include <nlohmann/json.hpp>

#include "simulator/predictor.hpp"

namespace specdec::sim {

// The prediction's numbers (times in ms); with `breakdown`, the per-operator costs of one step.
nlohmann::json prediction_json(const Prediction& p, bool breakdown);

// The scenario's names, workload and acceptance model (its description), with the draft-free
// method's match rate, MTP's module count or Medusa's head count where they apply.
nlohmann::json scenario_json(const Scenario& s);

}  // namespace specdec::sim
