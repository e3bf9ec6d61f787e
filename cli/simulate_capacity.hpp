#pragma once
// `specdec simulate --capacity-rate R --tpot-target-ms T`: the capacity planner's request read from
// the options, its search run, and its answer printed (text or JSON). The search is
// simulator/capacity.hpp's; this file is what the command line adds: which TPs and Ks to search by
// default, the sequential baseline beside the answer, each answer's queueing estimate (utilisation,
// P(wait), waits, TTFT with the wait), the simulator's measured error band and what the queueing
// estimate assumes.
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>
#include <ostream>

#include "simulator/predictor.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::cli {

// `s` is the scenario as the other options set it (its TP and K the first searched when they were
// given). Writes the plan into `json` (key "capacity" and beside it) when `json` is not null, else
// prints it to `out`.
void run_capacity_plan(const boost::program_options::variables_map& vm, const sim::Scenario& s,
                       const sim::SpecLibrary& specs, nlohmann::json* json, std::ostream& out);

// The TPs `--tp` asks for in capacity planning: a list or range, or (left at its default) every
// power of two up to one instance of the hardware.
std::vector<int> capacity_tensor_parallel_degrees(const boost::program_options::variables_map& vm,
                                                  const sim::HardwareSpec& hw);

}  // namespace specdec::cli
