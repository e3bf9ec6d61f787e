#include "simulator/scenario_options.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/io/json_input.hpp"
#include "reference/methods/method_spec.hpp"
#include "simulator/capacity_planning.hpp"
#include "simulator/method.hpp"
#include "simulator/model_shape.hpp"
#include "simulator/plan_json.hpp"
#include "simulator/spec_json.hpp"
#include "simulator/trace_replay.hpp"
#include "simulator/tree_shape.hpp"

namespace specdec::sim {

namespace {

bool exists_at(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(std::filesystem::symlink_status(path, ec));
}

// Sets the plan's tree from tree (static) or dynamic_tree (EAGLE-2, drafted beam-style); leaves a
// chain plan as it is.
void tree_from_options(const ScenarioOptions& o, const AcceptancePtr& acc, DraftPlan& plan, const OptionSpelling& sp) {
  if (o.tree && o.dynamic_tree) throw Error("give either " + sp("tree") + " or " + sp("dynamic-tree") + ", not both");
  if ((o.tree || o.dynamic_tree) && o.acceptance_table)
    throw Error(sp("acceptance-table") + " holds a chain's AL by K; for a tree give its measured AL (" + sp("al") +
                ") or acceptance by depth (" + sp("acceptance-by-depth") + ") with " + sp("tree") +
                ", or per-rank probabilities (" + sp("tree-acceptance") + ")");
  if (o.tree) {
    const std::string& t = *o.tree;
    if (!t.empty() && (t[0] == '[' || exists_at(t))) {
      const auto j = json_or_file(t, sp("tree"));
      plan.tree = make_tree_shape(get_rank_paths(j, sp("tree")), sp("tree"));
    } else {
      plan.tree = builtin_tree(t);
    }
    return;
  }
  if (o.dynamic_tree) {
    const std::vector<int>& v = *o.dynamic_tree;
    if (v.size() != 3) throw Error(sp("dynamic-tree") + ": expected TOTAL_TOKENS,DEPTH,TOP_K (e.g. 60,7,10)");
    if (!acc || o.acceptance_by_depth)
      throw Error(sp("dynamic-tree") + " chooses its tree from per-rank acceptance probabilities (" + sp("alpha") + ", " +
                  sp("tree-acceptance") + ", ...); for a tree whose AL was measured, give that tree (" + sp("tree") +
                  " with its choices) and " + sp("al") + " or " + sp("acceptance-by-depth"));
    set_dynamic_tree(plan, *acc, v[0], v[1], v[2]);
  }
}

}  // namespace

nlohmann::json json_or_file(const std::string& text, const std::string& option_spelled) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (text[first] == '[' || text[first] == '{')) return parse_json(text, option_spelled);
  if (exists_at(text)) return read_json_file(text, option_spelled + " file");
  throw Error(option_spelled + ": '" + text + "' is neither JSON nor a readable JSON file");
}

std::vector<int> best_k_up_to(int n, const OptionSpelling& sp) {
  if (n < 1) return {n};
  check_draft_limit(sp("best-k"), "K", n, kMaxDraftDepth);
  std::vector<int> ks;
  for (int k = 1; k <= n; ++k) ks.push_back(k);
  return ks;
}

AcceptancePtr acceptance_from_options(const ScenarioOptions& o, const OptionSpelling& sp) {
  const int given = o.alpha.has_value() + o.acceptance.has_value() + o.acceptance_table.has_value() +
                    o.acceptance_by_depth.has_value() + o.synthetic_al.has_value() + o.tree_acceptance.has_value() +
                    o.trace.has_value() + o.al.has_value();
  if (given > 1)
    throw Error("give one acceptance model: " + sp.list({"alpha", "acceptance", "acceptance-table", "acceptance-by-depth",
                                                         "synthetic-al", "tree-acceptance", "trace", "al"}));
  if (o.alpha) return iid_acceptance(*o.alpha);
  if (o.synthetic_al) return synthetic_acceptance_length(*o.synthetic_al);
  if (o.acceptance_by_depth) return acceptance_by_depth(*o.acceptance_by_depth);
  if (o.acceptance) return conditional_acceptance(*o.acceptance);
  if (o.acceptance_table) return table_acceptance(*o.acceptance_table);
  if (o.tree_acceptance) {
    const std::string name = sp("tree-acceptance");
    const auto j = json_or_file(*o.tree_acceptance, name);
    std::vector<std::vector<double>> p;
    if (!j.is_array()) throw Error(name + ": expected [[p(depth 1, rank 0), p(depth 1, rank 1), ...], ...]");
    for (const auto& row : j) {
      if (!row.is_array()) throw Error(name + ": each depth must be a list of per-rank probabilities");
      std::vector<double> r;
      for (const auto& v : row) {
        if (!v.is_number()) throw Error(name + ": probabilities must be numbers");
        r.push_back(v.get<double>());
      }
      p.push_back(r);
    }
    return tree_acceptance(p);
  }
  if (o.trace) return replay_acceptance_from_file(*o.trace);
  return nullptr;
}

BuiltScenario build_scenario(const ScenarioOptions& o, const SpecLibrary& specs, const OptionSpelling& sp) {
  BuiltScenario built;
  Scenario& s = built.scenario;
  s.target = specs.model(o.model);
  s.hardware = specs.hardware(o.hardware);
  s.engine = specs.engine_for(o.engine.value_or(""), s.hardware);
  if (o.engine_version) {
    parse_engine_version(*o.engine_version, sp("engine-version"));
    s.engine_version = *o.engine_version;
  }
  check_input_limit(sp("batch"), "the batch size", o.batch, kMaxSimulatedBatch);
  s.workload.batch = o.batch;
  // Capacity planning searches lists of TPs and layouts (every power of two of the instance by
  // default, and on a mixture-of-experts target every layout of each); the prediction given beside
  // the plan is at the first.
  if (o.capacity) {
    if (o.dp_attention != 1 || o.ep != 1)
      throw Error("capacity planning searches the layouts: give " + sp("dp-attention") + " and " + sp("ep") +
                  " as the capacity plan's lists of degrees to search");
    const Parallelism first = capacity_search_layouts(*o.capacity, s.target, s.hardware, sp).front();
    s.workload.tp = first.ranks;
    s.workload.dp_attention = first.dp_attention;
    s.workload.ep = first.ep;
  } else {
    check_input_limit(sp("tp"), "the tensor-parallel degree", o.tp, kMaxTensorParallel);
    s.workload.tp = o.tp;
    check_input_limit(sp("dp-attention"), "the attention data-parallel degree", o.dp_attention, kMaxTensorParallel);
    check_input_limit(sp("ep"), "the expert-parallel degree", o.ep, kMaxTensorParallel);
    s.workload.dp_attention = o.dp_attention;
    s.workload.ep = o.ep;
    validate_parallelism(parallelism_of(s.workload), s.target, sp);
  }
  check_input_limit(sp("prompt-len"), "the prompt length", o.prompt_len, kMaxPositions);
  check_input_limit(sp("output-len"), "the output length", o.output_len, kMaxPositions);
  s.workload.prompt_len = o.prompt_len;
  s.workload.output_len = o.output_len;
  if (o.dtype) s.workload.dtype = normalize_dtype(*o.dtype, sp("dtype"));
  if (s.workload.tp > s.hardware.devices_per_instance)
    throw Error(sp("tp", std::to_string(s.workload.tp)) + " exceeds the " + std::to_string(s.hardware.devices_per_instance) +
                " devices of one " + s.hardware.name + " instance");
  // A draft-free method's spec (no model; its acceptance by prompt category): the drafter given, or
  // the bundled drafters/<method>.json.
  std::optional<DrafterSpec> free_spec;
  if (o.drafter) {
    s.drafter = specs.drafter(*o.drafter, s.target);
    s.plan.method = s.drafter->method;
    DrafterSpec spec = specs.drafter_spec(*o.drafter);
    if (s.drafter->draft_free || !spec.categories.empty()) free_spec = std::move(spec);
  }
  if (o.method) {
    const MethodSpec ms = parse_method_text(*o.method, sp("method"));
    const Method m = parse_method(ms.name, sp("method"));
    if (m == Method::sequential) {
      s.drafter.reset();
      free_spec.reset();
    } else if (!s.drafter && draft_free(m)) {
      const auto names = specs.names("drafters");
      if (std::find(names.begin(), names.end(), ms.name) != names.end()) {
        s.drafter = specs.drafter(ms.name, s.target);
        free_spec = specs.drafter_spec(ms.name);
      }
    } else if (!s.drafter) {
      std::string fitting;  // the bundled specs of this method, e.g. the MTP modules shipped with their targets
      for (const auto& n : specs.names("drafters"))
        if (specs.drafter_spec(n).method == m) fitting += (fitting.empty() ? "" : ", ") + n;
      throw Error(sp("method", method_name(m)) + " needs " + sp("drafter") +
                  (fitting.empty() ? std::string() : " (bundled " + method_name(m) + " drafters: " + fitting + ")"));
    }
    s.plan.method = m;
    if (ms.params.contains("nodes")) {
      // Parameters are numbers (16 arrives as 16.0): a whole number within the decoder's node bound.
      const nlohmann::json& n = ms.params.at("nodes");
      const double v = n.is_number() ? n.get<double>() : -1.0;
      if (!(v >= 1 && v <= kMaxDraftNodes && v == std::floor(v)))
        throw Error(sp("method") + ": nodes must be an integer in [1, " + std::to_string(kMaxDraftNodes) + "], got " + n.dump());
      s.plan.nodes = int(v);
    }
  }
  const Method method = s.plan.method;
  const bool lookup = method != Method::sequential && draft_free(method);
  // Drafters with a model may carry their published acceptance as categories (MTP and Medusa
  // checkpoints' papers, EAGLE heads' papers and engines' measurements).
  const bool published = method != Method::sequential && !lookup;
  for (const char* opt : {"category", "match-rate"}) {
    const bool given = std::string(opt) == "category" ? o.category.has_value() : o.match_rate.has_value();
    if (given && !lookup && !(published && std::string(opt) == "category"))
      throw Error(sp(opt) + " is for draft-free methods (ngram, prompt-lookup, ngram-tree, suffix, suffix-tree); " +
                  (method == Method::sequential ? "no method was given (" + sp("method", "NAME") + ")"
                                                : "method " + method_name(method) + " drafts with a model: give its acceptance with " +
                                                      sp("alpha") + ", " + sp("acceptance") + ", ..."));
  }
  s.acceptance = acceptance_from_options(o, sp);
  if (o.al) s.measured_tokens_per_step = *o.al;
  std::optional<double> match_rate;
  std::string category_tree;  // a category measured on one tree: that tree's name,
  std::vector<int> category_dynamic_tree;  // ... or its dynamic setting {total_tokens, depth, top_k}
  if (o.match_rate) {
    match_rate = *o.match_rate;
    if (!(*match_rate >= 0 && *match_rate <= 1))
      throw Error(sp("match-rate") + ": the share of steps that draft must be in [0, 1]");
  }
  const std::string own_acceptance = sp("alpha") + ", " + sp("acceptance") + ", ...";
  // No acceptance given: a drafter spec's default category, its published acceptance, said so.
  std::string category = o.category.value_or("");
  const bool default_category = category.empty() && published && !s.acceptance && !s.measured_tokens_per_step && free_spec &&
                                !free_spec->default_category.empty();
  if (default_category) category = free_spec->default_category;
  if (!category.empty()) {
    const std::string name = category;
    if (s.acceptance || s.measured_tokens_per_step)
      throw Error(sp("category") + " takes the acceptance of category '" + name + "' from the drafter spec; give it or an " +
                  "acceptance model (" + own_acceptance + "), not both (to change a category's numbers, give a spec of your own " +
                  "with " + sp("drafter", "FILE") + ")");
    if (published && (!free_spec || free_spec->categories.empty()))
      throw Error(sp("category") + ": drafter '" + (s.drafter ? s.drafter->name : std::string("?")) +
                  "' holds no published acceptance (categories); give an acceptance model (" +
                  sp("alpha") + ", " + sp("acceptance") + ", " + sp("acceptance-by-depth") + ", " +
                  sp("tree-acceptance") + ", " + sp("al") + ", ...)");
    if (!free_spec || free_spec->categories.empty())
      throw Error(sp("category") + ": no drafter spec with prompt categories for method " + method_name(method) +
                  (free_spec ? " (drafter '" + free_spec->name + "' has none)"
                             : std::string(" (no drafters/") + method_name(method) + ".json)") +
                  "; give one with " + sp("drafter", "FILE") + ", or an acceptance model (" + own_acceptance + ")");
    const CategoryAcceptance& c = [&]() -> const CategoryAcceptance& {
      try {
        return free_spec->category(name);
      } catch (const Error& e) {
        throw Error(sp("category") + ": " + e.what());
      }
    }();
    CategoryAcceptance use = c;
    if (match_rate) use.match_rate = match_rate;
    s.acceptance = use.acceptance(free_spec->name);
    // Part of the result, so the same words for every caller: no option named.
    const std::string defaulted = default_category ? ", the drafter spec's default: give an acceptance model for your own" : "";
    if (c.model && default_category)
      s.acceptance = described_acceptance(c.model, "category '" + name + "' of " + free_spec->name + " (" + c.kind + defaulted + ")");
    if (use.match_rate) s.match_rate = *use.match_rate;
    if (c.measured_tree()) {
      // An AL measured on one tree: that tree is drafted and verified, with the measured AL.
      if (default_category && !s.engine.trees)
        throw Error("drafter '" + free_spec->name + "''s published acceptance (category '" + name + "') is an AL measured on " +
                    c.tree_label() + ", and engine '" + s.engine.name + "' verifies chains only: give an acceptance model for a " +
                    "chain (" + own_acceptance + ") or an engine that verifies trees (" + sp("engine", "sglang") +
                    ", tensorrt-llm or hf-eager)");
      const bool same_tree = c.tree.empty() ? !o.tree && (!o.dynamic_tree || *o.dynamic_tree == c.dynamic_tree)
                                            : !o.dynamic_tree && (!o.tree || *o.tree == c.tree);
      if (!same_tree)
        throw Error(sp("category", name) + " of " + free_spec->name + " is an AL measured on " + c.tree_label() + " (" + c.kind +
                    "): it prices that tree; leave the tree out or give exactly it (" +
                    (c.tree.empty() ? sp("dynamic-tree", std::to_string(c.dynamic_tree[0]) + "," + std::to_string(c.dynamic_tree[1]) +
                                                             "," + std::to_string(c.dynamic_tree[2]))
                                    : sp("tree", c.tree)) +
                    ")");
      s.measured_tokens_per_step = c.al;
      category_tree = c.tree;
      category_dynamic_tree = c.dynamic_tree;
      std::ostringstream note;
      note << "category '" << name << "' of " << free_spec->name << " (" << c.kind << "): AL " << c.al << " measured on "
           << c.tree_label() << defaulted;
      built.measured_note = note.str();
    }
  } else if (match_rate) {
    s.match_rate = *match_rate;
    if (s.acceptance) s.acceptance = with_match_rate(s.acceptance, *match_rate);
  }
  if (lookup && !s.acceptance && !s.measured_tokens_per_step)
    throw Error("method " + method_name(method) + " drafts from the token history, so its acceptance depends on how much the " +
                "output repeats the prompt: give " + sp("category") + " (" +
                (free_spec ? free_spec->name + "'s: " + free_spec->category_list() : std::string("no spec found for it")) +
                ") or an acceptance model (" +
                sp.list({"alpha", "acceptance", "acceptance-table", "acceptance-by-depth", "trace", "al"}) + ")");
  if (s.plan.method != Method::sequential && !s.acceptance && !s.measured_tokens_per_step)
    throw Error("speculative decoding needs an acceptance model: " +
                sp.list({"alpha", "acceptance", "acceptance-table", "acceptance-by-depth", "synthetic-al", "tree-acceptance",
                         "trace", "al"}) +
                (free_spec && !free_spec->categories.empty()
                     ? ", or " + sp("category") + " (" + free_spec->name + "'s published: " + free_spec->category_list() + ")"
                     : std::string()));
  s.plan.k = o.k.value_or(kDefaultDraftLength);
  check_draft_limit(sp("k"), "K", s.plan.k, kMaxDraftDepth);
  // K not given for a chain: its default, or the deepest K below it that the acceptance answers
  // (a published acceptance measured at K = 1 answers K = 1 only), said so in the output.
  if (!o.k && !o.best_k && s.acceptance && !s.measured_tokens_per_step && s.plan.method != Method::sequential &&
      !o.tree && !o.dynamic_tree && !s.acceptance->answers(s.plan.k)) {
    int k = s.plan.k;
    while (k > 1 && !s.acceptance->answers(k)) --k;
    if (s.acceptance->answers(k)) {
      built.k_note = "K = " + std::to_string(k) + ": " + sp("k") + " was not given, and the acceptance answers K <= " +
                     std::to_string(k) + " only (the default K = " + std::to_string(s.plan.k) + " is beyond it)";
      s.plan.k = k;
    }
  }
  tree_from_options(o, s.acceptance, s.plan, sp);
  if (!category_tree.empty()) s.plan.tree = builtin_tree(category_tree);
  if (!category_dynamic_tree.empty())
    set_measured_dynamic_tree(s.plan, category_dynamic_tree[0], category_dynamic_tree[1], category_dynamic_tree[2]);
  if (s.plan.tree && o.acceptance_by_depth) {
    // Measured on this tree: AL = 1 + Σ_d P(accepted >= d), one entry per depth of the tree.
    const std::vector<double>& reached = *o.acceptance_by_depth;
    if (int(reached.size()) != s.plan.tree->max_depth())
      throw Error(sp("acceptance-by-depth") + " gives " + std::to_string(reached.size()) + " depths, the tree has " +
                  std::to_string(s.plan.tree->max_depth()) + ": a tree's table is measured on that tree, one entry per depth");
    double al = 1.0;
    for (double r : reached) al += r;
    s.measured_tokens_per_step = al;
  }
  if (!category.empty()) built.category = category;
  built.category_default = default_category;
  return built;
}

}  // namespace specdec::sim
