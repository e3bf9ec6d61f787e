#include "simulator/plan_json.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/io/json_int.hpp"
#include "simulator/model_shape.hpp"
#include "simulator/spec_json.hpp"
#include "simulator/tree_shape.hpp"

namespace specdec::sim {

void set_measured_dynamic_tree(DraftPlan& plan, int total_tokens, int depth, int top_k) {
  std::vector<std::vector<double>> p(std::max(depth, 1));
  for (auto& row : p)
    for (int r = 0; r < std::max(top_k, 1); ++r) row.push_back(0.6 * std::pow(0.5, r));
  set_dynamic_tree(plan, *tree_acceptance(p), total_tokens, depth, top_k);  // throws on bad values
}

Workload parse_measured_workload(const nlohmann::json& r, const std::string& where) {
  Workload w;
  // The simulator's bounds (reference/core/input_limits.hpp; positions: the decoder's), named here
  // with the row.
  w.batch = get_int_in(r, "batch", 1, 1, kMaxSimulatedBatch, where);
  w.prompt_len = get_int_in(r, "prompt_len", 128, 1, int(kMaxPositions), where);
  w.output_len = get_int_in(r, "output_len", 256, 1, int(kMaxPositions), where);
  w.tp = get_int_in(r, "tp", 1, 1, kMaxTensorParallel, where);
  // The layout over the tp devices (simulator/parallelism.hpp; checked with the scenario).
  w.dp_attention = get_int_in(r, "dp_attention", 1, 1, kMaxTensorParallel, where);
  w.ep = get_int_in(r, "ep", 1, 1, kMaxTensorParallel, where);
  w.dtype = has_field(r, "dtype") ? normalize_dtype(get_string(r, "dtype", where), where) : "";
  return w;
}

double parse_measured_plan(const nlohmann::json& r, const std::string& where, const SpecLibrary& specs, Scenario& s) {
  s.plan = DraftPlan{};
  s.plan.method = parse_method(get_string(r, "method", where), where);
  if (s.plan.method == Method::sequential) throw Error(where + ": expected a speculative method, got 'sequential'");
  // A draft-free method has no model: its drafter spec is optional (it only carries categories).
  if (draft_free(s.plan.method) && !has_field(r, "drafter")) s.drafter.reset();
  else s.drafter = specs.drafter(get_string(r, "drafter", where), s.target);
  s.match_rate = 1.0;
  if (has_field(r, "match_rate")) {
    if (!draft_free(s.plan.method))
      throw Error(where + ": 'match_rate' (the share of steps that draft) is for draft-free methods, not " +
                  method_name(s.plan.method));
    s.match_rate = get_number(r, "match_rate", where);
    if (!(s.match_rate >= 0 && s.match_rate <= 1)) throw Error(where + ": 'match_rate' must be in [0, 1]");
  }
  const int shapes = int(has_field(r, "k")) + int(has_field(r, "tree")) + int(has_field(r, "dynamic_tree"));
  if (shapes != 1)
    throw Error(where + ": give exactly one draft shape: 'k' (a chain), 'tree' (a built-in name or rank paths) or "
                "'dynamic_tree' ([total_tokens, depth, top_k])");
  int longest = 0;  // drafts on the longest path
  if (has_field(r, "k")) {
    s.plan.k = get_int(r, "k", where);
    if (s.plan.k < 1) throw Error(where + ": 'k' must be >= 1 for method " + method_name(s.plan.method));
    check_draft_limit(where, "'k'", s.plan.k, kMaxDraftDepth);
    longest = s.plan.k;
  } else if (has_field(r, "tree")) {
    const nlohmann::json& t = r.at("tree");
    if (t.is_string()) {
      s.plan.tree = builtin_tree(t.get<std::string>());
    } else {
      s.plan.tree = make_tree_shape(get_rank_paths(t, where + ": 'tree' (a built-in tree name or a list of rank paths)"),
                                    where + " 'tree'");
    }
    longest = s.plan.tree->max_depth();
  } else {
    const nlohmann::json& t = r.at("dynamic_tree");
    if (!t.is_array() || t.size() != 3 || !t[0].is_number_integer() || !t[1].is_number_integer() ||
        !t[2].is_number_integer())
      throw Error(where + ": 'dynamic_tree' must be [total_tokens, depth, top_k], three integers");
    const std::string what = where + ": 'dynamic_tree'";
    set_measured_dynamic_tree(s.plan, json_int32(t[0], what + " total_tokens"), json_int32(t[1], what + " depth"),
                              json_int32(t[2], what + " top_k"));
    longest = s.plan.tree->max_depth();
  }
  const double al = get_number(r, "acceptance_length", where);
  if (!(al >= 1.0 && al <= longest + 1.0))
    throw Error(where + ": 'acceptance_length' must be in [1, " + std::to_string(longest + 1) +
                "] (it counts the bonus token; the longest draft path has " + std::to_string(longest) +
                (s.plan.tree ? " drafts" : " drafts: k + 1 at most") + "), got " + std::to_string(al));
  s.measured_tokens_per_step = al;
  return al;
}

}  // namespace specdec::sim
