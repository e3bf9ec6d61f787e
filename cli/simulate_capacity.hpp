#pragma once
// `specdec simulate --capacity-rate R --tpot-target-ms T`: the capacity plan of
// simulator/capacity_planning.hpp (the request, the search, the error band, the JSON) printed as
// a table: the cheapest configuration beside sequential decoding's, per TP, and the statement that
// queueing is not modelled.
#include <nlohmann/json.hpp>
#include <ostream>

#include "simulator/predictor.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::cli {

// `s` is the scenario of `o` (its TP and K the first searched when they were given). Writes the
// plan into `json` (key "capacity" and beside it) when `json` is not null, else prints it to `out`.
void run_capacity_plan(const sim::ScenarioOptions& o, const sim::Scenario& s, const sim::SpecLibrary& specs,
                       nlohmann::json* json, std::ostream& out);

}  // namespace specdec::cli
