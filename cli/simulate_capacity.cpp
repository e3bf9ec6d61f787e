#include "cli/simulate_capacity.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <utility>

#include "reference/core/format.hpp"
#include "simulator/capacity_planning.hpp"
#include "simulator/method.hpp"

namespace specdec::cli {

namespace {

using namespace specdec::sim;

std::string fixed(double v, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << v;
  return o.str();
}

std::string list_text(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

// "K 1, batch 128: 2 devices (TPOT 22.9 ms)", or why there is none.
std::string cell_text(const PlannedConfig* c, bool speculative, double tpot_target_ms) {
  if (!c) return "-";
  if (!c->why_not.empty()) return "not planned (below)";
  if (!c->plan.feasible) {
    const bool fits = !c->plan.options.empty() && c->plan.options.front().prediction.fits_memory;
    return fits ? "none within " + fixed(tpot_target_ms, 0) + " ms" : "does not fit in memory";
  }
  const std::string shape = !c->tree.empty() ? "tree " + c->tree + ", " : speculative ? "K " + std::to_string(c->k) + ", " : "";
  return shape + "batch " + std::to_string(c->plan.batch) + ": " +
         std::to_string(c->plan.devices) + (c->plan.devices == 1 ? " device (" : " devices (") + fixed(c->plan.load.tpot_s * 1e3, 1) + " ms)";
}

// Whether a search planned any layout but plain TP: then the tables show each row's layout.
bool layered(const std::vector<Parallelism>& layouts) {
  return std::any_of(layouts.begin(), layouts.end(), [](const Parallelism& l) { return !l.plain(); });
}

// "TP 8" or "TP 8, DP 8, EP 8".
std::string layout_label(const PlannedConfig& c) {
  const std::string tp = "TP " + std::to_string(c.tp);
  return c.layout().plain() ? tp : tp + ", DP " + std::to_string(c.dp_attention) + ", EP " + std::to_string(c.ep);
}

// "TP 1; TP 2 with attention DP 1, 2 and EP 1, 2; ...": the layouts searched at each TP.
std::string layouts_text(const std::vector<Parallelism>& layouts) {
  std::string out;
  for (size_t i = 0; i < layouts.size();) {
    const int tp = layouts[i].ranks;
    std::vector<int> ds, ps;
    for (; i < layouts.size() && layouts[i].ranks == tp; ++i) {
      if (std::find(ds.begin(), ds.end(), layouts[i].dp_attention) == ds.end()) ds.push_back(layouts[i].dp_attention);
      if (std::find(ps.begin(), ps.end(), layouts[i].ep) == ps.end()) ps.push_back(layouts[i].ep);
    }
    out += (out.empty() ? "" : "; ") + ("TP " + std::to_string(tp));
    if (ds != std::vector<int>{1} || ps != std::vector<int>{1})
      out += " with attention DP " + list_text(ds) + " and EP " + list_text(ps);
  }
  return out;
}

}  // namespace

void run_capacity_plan(const ScenarioOptions& o, const Scenario& s, const SpecLibrary& specs, nlohmann::json* json,
                       std::ostream& out) {
  const CapacityPlanning plan = run_capacity_planning(o, s, specs, kCommandLineSpelling);
  if (json) {
    capacity_planning_json(plan, s, *json);
    return;
  }
  print_capacity_plan(plan, s, out);
}

void print_capacity_plan(const CapacityPlanning& plan, const Scenario& s, std::ostream& out) {
  const CapacityRequest& req = plan.request;
  const std::vector<int>& tps = plan.tps;
  const std::vector<int>& ks = plan.ks;
  const CapacitySearch& r = plan.search;
  const bool speculative = s.plan.method != Method::sequential;
  const nlohmann::json& band = plan.error_band;

  const double target_ms = req.tpot_target_s * 1e3;
  const std::string percentile = "p" + format_double(reported_percentile(req));
  const std::string ttft_target =
      (req.ttft_percentile > 0 ? " and " + percentile + " TTFT" : std::string(" and TTFT")) + " + queueing wait <= " + fixed(req.ttft_target_s * 1e3, 0) + " ms";
  out << "\ncapacity plan: " << req.requests_per_s << " requests/s at TPOT <= " << target_ms << " ms"
      << (req.ttft_target_s > 0 ? ttft_target : std::string()) << ", utilisation <= " << format_double(req.max_utilization) << " (prompt "
      << s.workload.prompt_len << ", output " << s.workload.output_len << " tokens), " << s.target.name << " on " << s.hardware.name
      << " with " << s.engine.name << "\n";
  out << "searched: TP " << list_text(tps);
  if (speculative) {
    std::string trees;
    for (const auto& t : plan.trees) trees += (trees.empty() ? "" : ", ") + tree_setting_text(t);
    out << " x " << (!trees.empty() ? "trees " + trees + " (total tokens/depth/top-k)" : s.plan.tree ? "the tree given" : "K " + list_text(ks));
  }
  out << " x batch 1, 2, 4, ... (while the KV cache fits)\n";
  const bool layouts = layered(plan.layouts);
  if (layouts) out << "  layouts (" << plan.layouts.size() << "): " << layouts_text(plan.layouts) << "\n";
  out << "  cost: " << r.configs.size() + r.sequential_configs.size() << " configurations planned";
  if (speculative) out << " (" << r.configs.size() << " + " << r.sequential_configs.size() << " sequential)";
  out << ", " << r.batches_priced << " batch sizes priced\n";
  for (const auto& k : r.skipped) out << "  not evaluated: " << k.setting << ": " << k.reason << "\n";
  out << "\n  " << std::left << std::setw(22) << "" << std::right << std::setw(4) << "TP";
  if (layouts) out << std::setw(4) << "DP" << std::setw(4) << "EP";
  out << std::setw(4) << "K" << std::setw(7)
      << "batch" << std::setw(10) << "TPOT ms" << std::setw(10) << "replicas" << std::setw(9) << "devices" << std::setw(10) << "$/hour"
      << std::setw(16) << "$/M out tokens" << "\n";
  auto row = [&](const std::string& name, const std::optional<PlannedConfig>& c, bool with_k) {
    out << "  " << std::left << std::setw(22) << name << std::right;
    if (!c) {
      out << "  no configuration meets the targets within memory\n";
      return;
    }
    out << std::setw(4) << c->tp;
    if (layouts) out << std::setw(4) << c->dp_attention << std::setw(4) << c->ep;
    out << std::setw(4) << (with_k ? std::to_string(c->k) : "-") << std::setw(7) << c->plan.batch
        << std::setw(10) << fixed(c->plan.load.tpot_s * 1e3, 2) << std::setw(10) << c->plan.replicas << std::setw(9)
        << c->plan.devices << std::setw(10) << fixed(c->plan.cost_per_hour, 2) << std::setw(16)
        << fixed(c->plan.cost_per_million_output_tokens, 3) << "\n";
  };
  if (speculative) row("cheapest: " + method_title(s.plan.method), r.best, !s.plan.tree);
  if (speculative && r.best && !r.best->tree.empty())
    out << "  " << std::left << std::setw(22) << "" << "(its tree: " << r.best->tree << ", total tokens/depth/top-k)\n" << std::right;
  row(speculative ? "sequential decoding" : "cheapest: sequential", r.sequential, false);
  if (speculative && r.best && r.sequential) {
    const int saved = r.sequential->plan.devices - r.best->plan.devices;
    const auto devices = [](int n) { return std::to_string(n) + (n == 1 ? " device" : " devices"); };
    out << "  " << method_title(s.plan.method) << " needs " << devices(r.best->plan.devices) << " where sequential decoding needs "
        << devices(r.sequential->plan.devices);
    if (saved > 0) out << ": " << saved << " fewer (" << fixed(100.0 * saved / r.sequential->plan.devices, 0) << "%)";
    else if (saved < 0) out << ": " << -saved << " more";
    else out << " (the same number; compare the TPOTs)";
    out << "\n";
  }
  if (r.best || r.sequential) {
    out << "\n  queueing per replica (" << (req.arrival_cv == 1 ? std::string("M/G/c: Poisson arrivals") : "G/G/c: arrival cv " + format_double(req.arrival_cv))
        << ", c = batch slots; "
        << (req.output_len_cv > 0 ? "output length cv " + format_double(req.output_len_cv) : std::string("every output ") +
                                                                                        std::to_string(s.workload.output_len) + " tokens, C_s^2 = 0")
        << "):\n  " << std::left << std::setw(22) << "" << std::right << std::setw(7) << "util" << std::setw(9) << "P(wait)"
        << std::setw(10) << "wait ms" << std::setw(11) << (percentile + " wait") << std::setw(10) << "TTFT ms" << std::setw(12)
        << "TTFT+wait" << std::setw(11) << (percentile + " TTFT") << std::setw(7) << "C_s^2" << "\n";
    auto queue_row = [&](const std::string& name, const std::optional<PlannedConfig>& c) {
      if (!c) return;
      const ReplicaQueue& q = c->plan.load;
      out << "  " << std::left << std::setw(22) << name << std::right << std::setw(7) << fixed(q.queue.utilization, 3) << std::setw(9)
          << fixed(q.queue.p_wait, 3) << std::setw(10) << fixed(q.queue.mean_wait_s * 1e3, 1) << std::setw(11)
          << fixed(q.wait_at_percentile_s * 1e3, 1) << std::setw(10) << fixed(q.ttft_s * 1e3, 1) << std::setw(12)
          << fixed(q.ttft_with_wait_s * 1e3, 1) << std::setw(11) << fixed(q.ttft_at_percentile_s * 1e3, 1) << std::setw(7)
          << fixed(q.queue.service_scv, 2) << "\n";
    };
    if (speculative) queue_row("cheapest: " + method_title(s.plan.method), r.best);
    queue_row(speculative ? "sequential decoding" : "cheapest: sequential", r.sequential);
    std::string alone;
    for (const auto& [name, c] : {std::pair{"cheapest", &r.best}, std::pair{"sequential", &r.sequential}})
      if (*c && (speculative || std::string(name) == "sequential"))
        alone += (alone.empty() ? "" : ", ") + fixed((*c)->plan.prediction.ttft_s * 1e3, 1) + " ms (" + name + ")";
    out << "  (TTFT ms: under the load, once a slot is free: half the step in progress, then "
        << (s.engine.interleaves_prefill ? "the step that carries the prompt's rows" : "the prompt's prefill before the next step")
        << ";\n   a prompt alone on an idle replica: " << alone << ")\n";

    out << "\n  TPOT under load per replica (ms; the TPOT target is checked at the full batch;\n   " << s.engine.name
        << (s.engine.interleaves_prefill ? " interleaves each prompt's prefill into the decode steps"
                                         : " runs each prompt's prefill between the decode steps, stalling them")
        << "):\n  " << std::left << std::setw(22) << ""
        << std::right << std::setw(12) << "TPOT alone" << std::setw(12) << "prefill ms" << std::setw(8) << "share" << std::setw(10)
        << "tok/step" << std::setw(12) << "TPOT batch" << std::setw(12) << "mean batch" << std::setw(11) << "TPOT mean" << "\n";
    auto load_row = [&](const std::string& name, const std::optional<PlannedConfig>& c) {
      if (!c) return;
      const ReplicaQueue& q = c->plan.load;
      out << "  " << std::left << std::setw(22) << name << std::right << std::setw(12) << fixed(c->plan.prediction.tpot_s * 1e3, 2)
          << std::setw(12) << fixed(q.step.prefill_s_per_prompt * 1e3, 1) << std::setw(8) << fixed(q.step.prefill_share, 3)
          << std::setw(10) << fixed(q.step.prefill_tokens_per_step, 1) << std::setw(12) << fixed(q.tpot_s * 1e3, 2) << std::setw(12)
          << fixed(q.mean_occupancy, 1) << std::setw(11) << fixed(q.tpot_at_mean_occupancy_s * 1e3, 2) << "\n";
    };
    if (speculative) load_row("cheapest: " + method_title(s.plan.method), r.best);
    load_row(speculative ? "sequential decoding" : "cheapest: sequential", r.sequential);
    out << "  (TPOT alone: the decode step without prompts; prefill ms: one prompt's; share: of the replica's time; tok/step:\n"
           "   prompt tokens per step; TPOT batch: at the full batch, prompts included; mean batch: sequences decoding on\n"
           "   average, by Little's law; TPOT mean: at that occupancy)\n";
    auto set_by = [&](const std::string& name, const std::optional<PlannedConfig>& c) {
      if (!c || c->plan.replicas_set_by.empty()) return;
      std::string limits;
      for (const ReplicaLimit l : c->plan.replicas_set_by) {
        const std::string what = l == ReplicaLimit::prefill_capacity ? "its prompts' prefill alone would take the whole replica"
                                 : l == ReplicaLimit::tpot_target    ? "TPOT with the prompts' prefill beyond " + fixed(target_ms, 0) + " ms"
                                 : l == ReplicaLimit::max_utilization ? "utilisation beyond " + format_double(req.max_utilization)
                                                                      : "TTFT + queueing wait beyond the TTFT target";
        limits += (limits.empty() ? "" : "; ") + what;
      }
      out << "  " << name << ": " << c->plan.replicas << " replicas; " << c->plan.replicas - 1 << " would break: " << limits << "\n";
    };
    if (speculative) set_by(method_title(s.plan.method), r.best);
    set_by("sequential decoding", r.sequential);
  }
  out << "\n  per " << (layouts ? "layout" : "TP") << " (the cheapest K and batch of each):\n  " << std::left << std::setw(5) << "TP";
  if (layouts) out << std::setw(4) << "DP" << std::setw(4) << "EP";
  if (speculative) out << std::setw(44) << method_title(s.plan.method);
  out << "sequential\n";
  const auto same_layout = [](const PlannedConfig& c, const Parallelism& l) {
    return c.tp == l.ranks && c.dp_attention == l.dp_attention && c.ep == l.ep;
  };
  for (const Parallelism& l : plan.layouts) {
    const PlannedConfig* spec_best = nullptr;
    for (const auto& c : r.configs) {
      if (!same_layout(c, l)) continue;
      if (!spec_best || (c.plan.feasible && (!spec_best->plan.feasible || cheaper_config(c, *spec_best)))) spec_best = &c;
    }
    const PlannedConfig* seq = nullptr;
    for (const auto& c : r.sequential_configs)
      if (same_layout(c, l)) seq = &c;
    out << "  " << std::left << std::setw(5) << l.ranks;
    if (layouts) out << std::setw(4) << l.dp_attention << std::setw(4) << l.ep;
    if (speculative) out << std::setw(44) << std::left << cell_text(spec_best, !s.plan.tree, target_ms);
    out << cell_text(seq, false, target_ms) << "\n";
  }
  // Why a configuration could not be planned: once per layout, shape and reason, with the Ks (and
  // sequential decoding) it holds for.
  std::vector<std::pair<const PlannedConfig*, bool>> unplanned;  // and whether it is sequential decoding's
  for (const auto& c : r.configs)
    if (!c.why_not.empty()) unplanned.push_back({&c, false});
  for (const auto& c : r.sequential_configs)
    if (!c.why_not.empty()) unplanned.push_back({&c, true});
  std::vector<bool> said(unplanned.size(), false);
  for (size_t i = 0; i < unplanned.size(); ++i) {
    if (said[i]) continue;
    const PlannedConfig& c = *unplanned[i].first;
    std::vector<int> ks;
    bool sequential = false;
    for (size_t j = i; j < unplanned.size(); ++j) {
      const PlannedConfig& d = *unplanned[j].first;
      if (!same_layout(d, c.layout()) || d.why_not != c.why_not || d.tree != c.tree) continue;
      said[j] = true;
      if (unplanned[j].second)
        sequential = true;
      else if (d.k > 0)
        ks.push_back(d.k);
    }
    std::string which = !c.tree.empty() ? "tree " + c.tree : ks.empty() ? "" : (ks.size() == 1 ? "K " : "Ks ") + list_text(ks);
    if (sequential && speculative) which += which.empty() ? "sequential decoding" : " and sequential decoding";
    out << "  not planned: " << layout_label(c) << (which.empty() ? "" : ", " + which) << ": " << c.why_not << "\n";
  }
  if (!band.is_null())
    out << "\n  prediction error: on " << band["results"].get<size_t>() << " published results it was never fitted to, the simulator is "
        << fixed(100 * band["mean_abs_relative_error"].get<double>(), 0) << "% off on average (largest "
        << fixed(100 * band["max_abs_relative_error"].get<double>(), 0) << "%; " << band["command"].get<std::string>() << ")\n";
  out << "  queueing: " << kCapacityQueueing << "\n";
}

void print_capacity_comparison(const CapacityComparison& c, std::ostream& out) {
  const bool layouts = std::any_of(c.drafters.begin(), c.drafters.end(),
                                   [](const DrafterCapacity& d) { return d.planning && layered(d.planning->layouts); });
  out << "methods compared (each drafter planned over TP x " << (layouts ? "layout x " : "") << "K x batch with its acceptance):\n  "
      << std::left << std::setw(28) << "drafter" << std::setw(9) << "method" << std::right << std::setw(4) << "TP";
  if (layouts) out << std::setw(4) << "DP" << std::setw(4) << "EP";
  out << std::setw(6) << "K" << std::setw(7) << "batch"
      << std::setw(10) << "TPOT ms" << std::setw(9) << "devices" << "   acceptance\n";
  for (size_t i = 0; i < c.drafters.size(); ++i) {
    const DrafterCapacity& d = c.drafters[i];
    out << (c.best && *c.best == i ? "* " : "  ") << std::left << std::setw(28) << d.drafter << std::setw(9)
        << (d.built ? method_name(d.built->scenario.plan.method) : std::string("-")) << std::right;
    if (d.planning && d.planning->search.best) {
      const PlannedConfig& b = *d.planning->search.best;
      const bool chain = !d.built->scenario.plan.tree;
      out << std::setw(4) << b.tp;
      if (layouts) out << std::setw(4) << b.dp_attention << std::setw(4) << b.ep;
      out << std::setw(6) << (chain ? std::to_string(b.k) : "tree") << std::setw(7) << b.plan.batch
          << std::setw(10) << fixed(b.plan.load.tpot_s * 1e3, 2) << std::setw(9) << b.plan.devices << "   "
          << acceptance_source(*d.built) << "\n";
    } else {
      out << "   not planned: " << d.why_not << "\n";
    }
  }
  if (!c.note.empty()) out << "note: " << c.note << "\n";
  if (!c.best) {
    out << "\nno drafter meets the targets within memory\n";
    return;
  }
  const DrafterCapacity& best = c.drafters[*c.best];
  out << "\ncheapest: " << best.drafter << " (* above); its plan:\n";
  print_capacity_plan(*best.planning, best.built->scenario, out);
}

}  // namespace specdec::cli
