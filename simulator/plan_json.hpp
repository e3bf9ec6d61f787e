#pragma once
// A measured configuration read from a JSON row (calibration and evaluation sets):
// the method, the drafter, one draft shape and the AL the measurement saw.
//   "method", "drafter", exactly one of "k" (a chain; P-EAGLE: its depth), "tree" (a built-in name
//   or rank paths [[0],[1],[0,0]]) or "dynamic_tree" ([total_tokens, depth, top_k], drafted
//   beam-style as EAGLE-2 and SGLang do), and "acceptance_length" (counting the bonus token).
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/predictor.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::sim {

// The workload of a measured row: "batch" (1), "prompt_len" (128), "output_len" (256), "tp" (1),
// its layout "dp_attention" (1) and "ep" (1), "dtype" (the model's).
Workload parse_measured_workload(const nlohmann::json& r, const std::string& where);

// Sets s.plan, s.drafter, s.match_rate and s.measured_tokens_per_step from `r` (a draft-free
// method needs no "drafter" and may give "match_rate"); s.target must be set. Throws
// naming `where` and the field on a missing or inconsistent entry. Returns the AL.
double parse_measured_plan(const nlohmann::json& r, const std::string& where, const SpecLibrary& specs, Scenario& s);

// The tree of a dynamic (EAGLE-2) setting whose AL was measured: its cost depends on the node
// count, the depth and the drafting (depth steps over top_k frontier nodes), not on which ranks
// fill it, so the tree is shaped by an acceptance that halves with each rank.
void set_measured_dynamic_tree(DraftPlan& plan, int total_tokens, int depth, int top_k);

}  // namespace specdec::sim
