#include "simulator/capacity_planning.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "simulator/evaluation.hpp"
#include "simulator/method.hpp"

namespace specdec::sim {

const char* const kCapacityQueueing =
    "each replica a G/G/c queue: arrivals at the rate / replicas (Poisson unless an arrival CV is given; a bursty "
    "stream split at random among the replicas, C^2 = 1 + (C_a^2 - 1) / replicas), c = its batch slots, service = TTFT + "
    "output_len x TPOT; Erlang C for P(wait), the Allen-Cunneen mean wait, an M/M/c-shaped tail for the percentile. "
    "TPOT includes the replica's prompts' prefill (interleaved into the steps, or between them where the engine does "
    "not interleave): step = decode step / (1 - rate x prefill per prompt). The TPOT target is checked at the full "
    "batch, the worst case a replica admits; the TPOT at the mean occupancy is shown beside it. TTFT = half "
    "the step in progress + the prompt's prefill (the whole next step carrying it where prefill is interleaved). "
    "Assumed: a prompt prefilled in one step; see docs/simulator.md";

namespace {

// The Ks a capacity search tries: the best K's list, else K when given, else 1..8. A tree or a
// measured AL prices one shape, its own.
std::vector<int> planned_ks(const ScenarioOptions& o, const Scenario& s) {
  if (s.plan.method == Method::sequential) return {};
  if (s.plan.tree || s.measured_tokens_per_step || !s.acceptance) return {s.plan.k};
  if (o.best_k) return *o.best_k;
  if (o.k) return {s.plan.k};
  std::vector<int> ks;
  for (int k = 1; k <= std::min(kDefaultPlannedDepth, kMaxDraftDepth); ++k) ks.push_back(k);
  return ks;
}

// The simulator's error on the published results bundled with it (simulator/evaluation), under
// the specs in use: what a user should read every prediction with. Null when the sets are absent.
nlohmann::json error_band(const SpecLibrary& specs) {
  const std::filesystem::path dir = SpecLibrary::bundled_dir().parent_path() / "evaluation";
  if (!std::filesystem::is_directory(dir)) return nullptr;
  std::vector<EvaluationResult> results;
  for (const auto& set : load_evaluation_sets(dir, specs)) results.push_back(evaluate_published(set));
  const EvaluationResult all = pool_evaluations(results);
  return {{"results", all.rows.size()},
          {"mean_abs_relative_error", all.mean_abs_error},
          {"max_abs_relative_error", all.max_abs_error},
          {"mean_relative_error", all.mean_error},
          {"command", "specdec simulate --evaluate simulator/evaluation"}};
}

nlohmann::json config_json(const PlannedConfig& c) {
  nlohmann::json j = {{"tp", c.tp},
                      {"dp_attention", c.dp_attention},
                      {"ep", c.ep},
                      {"layout", describe_parallelism(c.layout())},
                      {"k", c.k},
                      {"feasible", c.plan.feasible}};
  if (!c.tree.empty()) j["tree"] = c.tree;
  if (!c.why_not.empty()) j["why_not"] = c.why_not;
  if (c.plan.feasible) {
    j["batch"] = c.plan.batch;
    j["replicas"] = c.plan.replicas;
    j["devices"] = c.plan.devices;
    j["cost_per_hour_usd"] = c.plan.cost_per_hour;
    j["cost_per_million_output_tokens_usd"] = c.plan.cost_per_million_output_tokens;
    const ReplicaQueue& q = c.plan.load;
    j["tpot_ms"] = q.tpot_s * 1e3;
    j["tpot_at_mean_occupancy_ms"] = q.tpot_at_mean_occupancy_s * 1e3;
    j["mean_occupancy"] = q.mean_occupancy;
    j["decode_tpot_ms"] = c.plan.prediction.tpot_s * 1e3;
    j["ttft_ms"] = q.ttft_s * 1e3;
    j["ttft_alone_ms"] = c.plan.prediction.ttft_s * 1e3;
    j["speedup"] = c.plan.prediction.speedup;
    j["step_ms"] = q.step.step_s * 1e3;
    j["decode_step_ms"] = q.step.decode_step_s * 1e3;
    j["prefill_ms_per_prompt"] = q.step.prefill_s_per_prompt * 1e3;
    j["prefill_share"] = q.step.prefill_share;
    j["prompts_per_step"] = q.step.prompts_per_step;
    j["prefill_tokens_per_step"] = q.step.prefill_tokens_per_step;
    j["replicas_set_by"] = nlohmann::json::array();
    for (const ReplicaLimit l : c.plan.replicas_set_by) j["replicas_set_by"].push_back(replica_limit_name(l));
    j["service_s"] = q.queue.service_s;
    j["service_scv"] = q.queue.service_scv;
    j["arrival_scv"] = q.queue.arrival_scv;
    j["utilization"] = q.queue.utilization;
    j["p_wait"] = q.queue.p_wait;
    j["queue_wait_ms"] = q.queue.mean_wait_s * 1e3;
    j["ttft_with_wait_ms"] = q.ttft_with_wait_s * 1e3;
    j["percentile"] = q.percentile;
    j["queue_wait_at_percentile_ms"] = q.wait_at_percentile_s * 1e3;
    j["ttft_at_percentile_ms"] = q.ttft_at_percentile_s * 1e3;
  }
  return j;
}

}  // namespace

std::vector<int> capacity_tensor_parallel_degrees(const std::optional<std::vector<int>>& given, const HardwareSpec& hw,
                                                  const OptionSpelling& sp) {
  if (!given) return default_tensor_parallel_degrees(hw);
  std::vector<int> tps = *given;
  if (tps.empty()) throw Error(sp("tp") + ": no tensor-parallel degree given");
  for (const int tp : tps) {
    if (tp < 1) throw Error(sp("tp") + ": the tensor-parallel degree must be >= 1, got " + std::to_string(tp));
    if (tp > hw.devices_per_instance)
      throw Error(sp("tp", std::to_string(tp)) + " exceeds the " + std::to_string(hw.devices_per_instance) + " devices of one " +
                  hw.name + " instance");
  }
  std::sort(tps.begin(), tps.end());
  tps.erase(std::unique(tps.begin(), tps.end()), tps.end());
  return tps;
}

std::vector<Parallelism> capacity_search_layouts(const CapacityOptions& c, const ModelShape& target, const HardwareSpec& hw,
                                                 const OptionSpelling& sp) {
  const std::vector<int> tps = capacity_tensor_parallel_degrees(c.tp, hw, sp);
  std::string tp_text;
  for (const int tp : tps) tp_text += (tp_text.empty() ? "" : ",") + std::to_string(tp);
  const auto check = [&](const std::optional<std::vector<int>>& list, const char* option, const char* what, auto fits) {
    if (!list) return;
    if (list->empty()) throw Error(sp(option) + ": no " + what + " given");
    for (const int v : *list) {
      if (v < 1) throw Error(sp(option, std::to_string(v)) + ": the " + what + " must be >= 1 (1: none)");
      if (std::none_of(tps.begin(), tps.end(), [&](int tp) { return fits(v, tp); }))
        throw Error(sp(option, std::to_string(v)) + " fits none of the tensor-parallel degrees searched (" + sp("tp", tp_text) +
                    "): " + (std::string(option) == "ep" ? "EP must divide the replica's devices, its TP"
                                                         : "attention DP must divide the replica's devices, its TP"));
    }
  };
  check(c.dp_attention, "dp-attention", "attention data-parallel degree", [](int d, int tp) { return tp % d == 0; });
  check(c.ep, "ep", "expert-parallel degree", [](int p, int tp) { return tp % p == 0; });
  const std::vector<Parallelism> layouts = capacity_layouts(tps, target, c.dp_attention, c.ep);
  if (layouts.empty())
    throw Error(sp("dp-attention") + " and " + sp("ep") + " leave no layout at any tensor-parallel degree searched (" +
                sp("tp", tp_text) + "): EP must divide the TP, and under data-parallel attention equal it");
  return layouts;
}

CapacityPlanning run_capacity_planning(const ScenarioOptions& o, const Scenario& s, const SpecLibrary& specs,
                                       const OptionSpelling& sp) {
  const CapacityOptions c = o.capacity.value_or(CapacityOptions{});
  if (!c.capacity_rate || !c.tpot_target_ms)
    throw Error("capacity planning needs both " + sp("capacity-rate") + " and " + sp("tpot-target-ms"));
  CapacityPlanning plan;
  CapacityRequest& req = plan.request;
  req.requests_per_s = *c.capacity_rate;
  req.tpot_target_s = *c.tpot_target_ms * 1e-3;
  req.ttft_target_s = c.ttft_target_ms * 1e-3;
  // Written so that NaN fails too (program_options reads "nan" and "inf").
  if (!(req.requests_per_s > 0 && std::isfinite(req.requests_per_s)))
    throw Error(sp("capacity-rate") + ": the offered load must be a finite number > 0 requests/s, got " +
                std::to_string(req.requests_per_s));
  if (!(req.tpot_target_s > 0 && std::isfinite(req.tpot_target_s)))
    throw Error(sp("tpot-target-ms") + ": must be a finite number > 0 milliseconds");
  if (!(req.ttft_target_s >= 0 && std::isfinite(req.ttft_target_s)))
    throw Error(sp("ttft-target-ms") + ": must be a finite number >= 0 milliseconds (0 = none)");
  if (c.price) {
    req.price_per_device_hour = *c.price;
    if (!(req.price_per_device_hour >= 0 && std::isfinite(req.price_per_device_hour)))
      throw Error(sp("price") + " must be a finite number >= 0 USD per device-hour");
  }
  req.max_utilization = c.max_utilization;
  if (!(req.max_utilization > 0 && req.max_utilization < 1))
    throw Error(sp("max-utilization") + ": must be a number > 0 and < 1 (at 1 or more a replica's queue grows without bound), got " +
                format_double(req.max_utilization));
  req.output_len_cv = c.output_len_cv;
  if (!(req.output_len_cv >= 0 && req.output_len_cv <= kMaxOutputLenCv))
    throw Error(sp("output-len-cv") + ": the coefficient of variation of output lengths must be a number in [0, " +
                format_double(kMaxOutputLenCv) + "] (0: every output is " + sp("output-len") + " tokens; exponential lengths: 1), got " +
                format_double(req.output_len_cv));
  req.arrival_cv = c.arrival_cv;
  if (!(req.arrival_cv >= 0 && req.arrival_cv <= kMaxArrivalCv))
    throw Error(sp("arrival-cv") + ": the coefficient of variation of interarrival times must be a number in [0, " +
                format_double(kMaxArrivalCv) + "] (1: Poisson arrivals; above 1: bursty), got " + format_double(req.arrival_cv));
  if (c.ttft_percentile) {
    req.ttft_percentile = *c.ttft_percentile;
    if (!(req.ttft_percentile > 0 && req.ttft_percentile < 100))
      throw Error(sp("ttft-percentile") + ": must be a number between 0 and 100 (exclusive), e.g. 99, got " +
                  format_double(req.ttft_percentile));
  }
  plan.layouts = capacity_search_layouts(c, s.target, s.hardware, sp);
  for (const Parallelism& l : plan.layouts)
    if (plan.tps.empty() || plan.tps.back() != l.ranks) plan.tps.push_back(l.ranks);
  // An EAGLE-2 tree grid (--best-tree) is searched under the load as K is, not fixed at batch 1's best.
  const bool trees = o.best_tree && s.acceptance && !s.measured_tokens_per_step && s.plan.method != Method::sequential;
  if (trees) {
    for (int total : o.best_tree->total_tokens)
      for (int depth : o.best_tree->depths)
        for (int top_k : o.best_tree->top_ks) plan.trees.push_back({total, depth, top_k});
    plan.ks = {s.plan.k};
  } else {
    plan.ks = planned_ks(o, s);
  }
  // The search's size, refused before any of it is planned when beyond what one search plans.
  const size_t shapes = trees ? plan.trees.size() : plan.ks.size();
  const long long configurations = capacity_configurations(plan.layouts.size(), shapes);
  if (configurations > kMaxCapacityConfigurations) {
    const std::string one_and_eight = sp.assign == " " ? "1,8" : "[1, 8]";  // a list as the caller writes one
    std::ostringstream e;
    e << "capacity planning: the search would plan " << configurations << " configurations (" << plan.layouts.size()
      << " layouts over " << sp("tp") << " x " << shapes << (trees ? " trees" : " Ks")
      << ", and sequential decoding at each layout), more than the " << kMaxCapacityConfigurations
      << " one search plans (each prices up to 11 batch sizes and their replicas); narrow it with " << sp("tp")
      << " (e.g. " << sp("tp", "8") << "), " << sp("dp-attention") << " and " << sp("ep") << " (e.g. "
      << sp("dp-attention", one_and_eight) << " " << sp("ep", one_and_eight) << "), "
      << (trees ? "or a smaller " + sp("best-tree") + " grid" : "or " + sp("k") + " or " + sp("best-k"));
    throw Error(e.str());
  }
  plan.search = trees ? search_capacity_trees_layouts(s, req, plan.layouts, plan.trees)
                      : search_capacity_layouts(s, req, plan.layouts, plan.ks);
  plan.error_band = error_band(specs);
  return plan;
}

void capacity_planning_json(const CapacityPlanning& plan, const Scenario& s, nlohmann::json& j) {
  const CapacitySearch& r = plan.search;
  j["capacity"] = r.best ? config_json(*r.best) : nlohmann::json{{"feasible", false}};
  j["capacity"]["method"] = method_name(s.plan.method);
  j["capacity_sequential"] = r.sequential ? config_json(*r.sequential) : nlohmann::json{{"feasible", false}};
  j["capacity_search"] = {{"tp", plan.tps}, {"k", plan.ks}, {"configs", nlohmann::json::array()}, {"sequential", nlohmann::json::array()}};
  nlohmann::json layouts = nlohmann::json::array();
  for (const Parallelism& l : plan.layouts) layouts.push_back({{"tp", l.ranks}, {"dp_attention", l.dp_attention}, {"ep", l.ep}});
  j["capacity_search"]["layouts"] = layouts;
  // The search's cost: configurations planned (speculative and sequential) and batch sizes priced.
  j["capacity_search"]["configurations"] = r.configs.size() + r.sequential_configs.size();
  j["capacity_search"]["batches_priced"] = r.batches_priced;
  if (!plan.trees.empty()) {
    j["capacity_search"]["trees"] = nlohmann::json::array();
    for (const auto& t : plan.trees) j["capacity_search"]["trees"].push_back(tree_setting_text(t));
  }
  for (const auto& c : r.configs) j["capacity_search"]["configs"].push_back(config_json(c));
  for (const auto& c : r.sequential_configs) j["capacity_search"]["sequential"].push_back(config_json(c));
  for (const auto& k : r.skipped) j["capacity_search"]["skipped"].push_back({{"setting", k.setting}, {"reason", k.reason}});
  const CapacityRequest& req = plan.request;
  j["capacity_search"]["max_utilization"] = req.max_utilization;
  j["capacity_search"]["output_len_cv"] = req.output_len_cv;
  j["capacity_search"]["arrival_cv"] = req.arrival_cv;
  j["capacity_search"]["ttft_checked_at"] = req.ttft_percentile > 0 ? nlohmann::json(req.ttft_percentile) : nlohmann::json("mean");
  j["capacity_search"]["tpot_checked_at"] = "full_batch";
  j["capacity_search"]["prefill"] = s.engine.interleaves_prefill ? "interleaved" : "separate";
  j["capacity_queueing"] = kCapacityQueueing;
  j["error_band"] = plan.error_band;
}

}  // namespace specdec::sim
