#pragma once
// `specdec simulate --capacity-rate R --tpot-target-ms T`: the capacity plan of
// simulator/capacity_planning.hpp (the request, the search, each answer's queueing estimate, the
// error band, the JSON) printed as tables: the cheapest configuration beside sequential decoding's,
// each one's queue (utilisation, P(wait), waits, TTFT with the wait), per TP, and what the queueing
// estimate assumes.
#include <nlohmann/json.hpp>
#include <ostream>

#include "simulator/capacity_comparison.hpp"
#include "simulator/predictor.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::cli {

// `s` is the scenario of `o` (its TP and K the first searched when they were given). Writes the
// plan into `json` (key "capacity" and beside it) when `json` is not null, else prints it to `out`.
void run_capacity_plan(const sim::ScenarioOptions& o, const sim::Scenario& s, const sim::SpecLibrary& specs,
                       nlohmann::json* json, std::ostream& out);

// A plan's tables (the answer beside sequential decoding, the queues, per TP, the error band).
void print_capacity_plan(const sim::CapacityPlanning& plan, const sim::Scenario& s, std::ostream& out);

// Several drafters planned for one load (simulator/capacity_comparison.hpp): one line per drafter
// (its method, acceptance and cheapest configuration, or why not), then the cheapest one's plan.
void print_capacity_comparison(const sim::CapacityComparison& c, std::ostream& out);

}  // namespace specdec::cli
