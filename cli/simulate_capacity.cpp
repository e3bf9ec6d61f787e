#include "cli/simulate_capacity.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "cli/simulate_options.hpp"
#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "simulator/capacity.hpp"
#include "simulator/evaluation.hpp"
#include "simulator/method.hpp"

namespace specdec::cli {

namespace {

namespace po = boost::program_options;
using namespace specdec::sim;

// Chains are searched over K = 1..kDefaultPlannedDepth unless --k or --best-k says otherwise:
// deeper chains rarely pay at the batch sizes a capacity plan runs.
constexpr int kDefaultPlannedDepth = 8;

const char* const kQueueing =
    "each replica an M/G/c queue: Poisson arrivals at the rate / replicas, c = its batch slots, service = TTFT + "
    "output_len x TPOT; Erlang C for P(wait), the Allen-Cunneen mean wait, an M/M/c-shaped tail for the percentile. "
    "Assumed: prefill not interleaved with other requests' decoding, TPOT at the full batch (conservative while slots "
    "are idle); see docs/simulator.md";

// "0.85", "1e+06": a number as given, not std::to_string's six decimals.
std::string plain(double v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

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

// The Ks a capacity search tries: --best-k's list, else --k when given, else 1..8. A tree or a
// measured AL prices one shape, its own.
std::vector<int> planned_ks(const po::variables_map& vm, const Scenario& s) {
  if (s.plan.method == Method::sequential) return {};
  if (s.plan.tree || s.measured_tokens_per_step || !s.acceptance) return {s.plan.k};
  if (vm.count("best-k")) {
    return best_k_list(vm["best-k"].as<std::string>());
  }
  if (!vm["k"].defaulted()) return {s.plan.k};
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
  nlohmann::json j = {{"tp", c.tp}, {"k", c.k}, {"feasible", c.plan.feasible}};
  if (!c.why_not.empty()) j["why_not"] = c.why_not;
  if (c.plan.feasible) {
    j["batch"] = c.plan.batch;
    j["replicas"] = c.plan.replicas;
    j["devices"] = c.plan.devices;
    j["cost_per_hour_usd"] = c.plan.cost_per_hour;
    j["cost_per_million_output_tokens_usd"] = c.plan.cost_per_million_output_tokens;
    j["tpot_ms"] = c.plan.prediction.tpot_s * 1e3;
    j["ttft_ms"] = c.plan.prediction.ttft_s * 1e3;
    j["speedup"] = c.plan.prediction.speedup;
    const ReplicaQueue& q = c.plan.load;
    j["service_s"] = q.queue.service_s;
    j["service_scv"] = q.queue.service_scv;
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

// "K 1, batch 128: 2 devices (TPOT 22.9 ms)", or why there is none.
std::string cell_text(const PlannedConfig* c, bool speculative, double tpot_target_ms) {
  if (!c) return "-";
  if (!c->why_not.empty()) return "not planned (below)";
  if (!c->plan.feasible) {
    const bool fits = !c->plan.options.empty() && c->plan.options.front().prediction.fits_memory;
    return fits ? "none within " + fixed(tpot_target_ms, 0) + " ms" : "does not fit in memory";
  }
  return (speculative ? "K " + std::to_string(c->k) + ", " : std::string()) + "batch " + std::to_string(c->plan.batch) + ": " +
         std::to_string(c->plan.devices) + (c->plan.devices == 1 ? " device (" : " devices (") + fixed(c->plan.prediction.tpot_s * 1e3, 1) + " ms)";
}

}  // namespace

std::vector<int> capacity_tensor_parallel_degrees(const po::variables_map& vm, const HardwareSpec& hw) {
  if (vm["tp"].defaulted()) return default_tensor_parallel_degrees(hw);
  std::vector<int> tps = parse_int_list(vm["tp"].as<std::string>(), "tp", kMaxTensorParallel);
  for (const int tp : tps) {
    if (tp < 1) throw Error("--tp: the tensor-parallel degree must be >= 1, got " + std::to_string(tp));
    if (tp > hw.devices_per_instance)
      throw Error("--tp " + std::to_string(tp) + " exceeds the " + std::to_string(hw.devices_per_instance) + " devices of one " +
                  hw.name + " instance");
  }
  std::sort(tps.begin(), tps.end());
  tps.erase(std::unique(tps.begin(), tps.end()), tps.end());
  return tps;
}

void run_capacity_plan(const po::variables_map& vm, const Scenario& s, const SpecLibrary& specs, nlohmann::json* json,
                       std::ostream& out) {
  if (!vm.count("capacity-rate") || !vm.count("tpot-target-ms"))
    throw Error("capacity planning needs both --capacity-rate and --tpot-target-ms");
  CapacityRequest req;
  req.requests_per_s = vm["capacity-rate"].as<double>();
  req.tpot_target_s = vm["tpot-target-ms"].as<double>() * 1e-3;
  req.ttft_target_s = vm["ttft-target-ms"].as<double>() * 1e-3;
  // Written so that NaN fails too (program_options reads "nan" and "inf").
  if (!(req.requests_per_s > 0 && std::isfinite(req.requests_per_s)))
    throw Error("--capacity-rate: the offered load must be a finite number > 0 requests/s, got " + std::to_string(req.requests_per_s));
  if (!(req.tpot_target_s > 0 && std::isfinite(req.tpot_target_s))) throw Error("--tpot-target-ms: must be a finite number > 0 milliseconds");
  if (!(req.ttft_target_s >= 0 && std::isfinite(req.ttft_target_s)))
    throw Error("--ttft-target-ms: must be a finite number >= 0 milliseconds (0 = none)");
  if (vm.count("price")) {
    req.price_per_device_hour = vm["price"].as<double>();
    if (!(req.price_per_device_hour >= 0 && std::isfinite(req.price_per_device_hour)))
      throw Error("--price must be a finite number >= 0 USD per device-hour");
  }
  if (vm.count("max-utilization")) {
    req.max_utilization = vm["max-utilization"].as<double>();
    if (!(req.max_utilization > 0 && req.max_utilization < 1))
      throw Error("--max-utilization: must be a number > 0 and < 1 (at 1 or more a replica's queue grows without bound), got " +
                  plain(req.max_utilization));
  }
  if (vm.count("output-len-cv")) {
    req.output_len_cv = vm["output-len-cv"].as<double>();
    if (!(req.output_len_cv >= 0 && req.output_len_cv <= kMaxOutputLenCv))
      throw Error("--output-len-cv: the coefficient of variation of output lengths must be a number in [0, " + plain(kMaxOutputLenCv) +
                  "] (0: every output is --output-len tokens; exponential lengths: 1), got " + plain(req.output_len_cv));
  }
  if (vm.count("ttft-percentile")) {
    req.ttft_percentile = vm["ttft-percentile"].as<double>();
    if (!(req.ttft_percentile > 0 && req.ttft_percentile < 100))
      throw Error("--ttft-percentile: must be a number between 0 and 100 (exclusive), e.g. 99, got " + plain(req.ttft_percentile));
  }
  const std::vector<int> tps = capacity_tensor_parallel_degrees(vm, s.hardware);
  const std::vector<int> ks = planned_ks(vm, s);
  const CapacitySearch r = search_capacity(s, req, tps, ks);
  const bool speculative = s.plan.method != Method::sequential;
  const nlohmann::json band = error_band(specs);

  if (json) {
    nlohmann::json& j = *json;
    j["capacity"] = r.best ? config_json(*r.best) : nlohmann::json{{"feasible", false}};
    j["capacity"]["method"] = method_name(s.plan.method);
    j["capacity_sequential"] = r.sequential ? config_json(*r.sequential) : nlohmann::json{{"feasible", false}};
    j["capacity_search"] = {{"tp", tps}, {"k", ks}, {"configs", nlohmann::json::array()}, {"sequential", nlohmann::json::array()}};
    for (const auto& c : r.configs) j["capacity_search"]["configs"].push_back(config_json(c));
    for (const auto& c : r.sequential_configs) j["capacity_search"]["sequential"].push_back(config_json(c));
    for (const auto& k : r.skipped) j["capacity_search"]["skipped"].push_back({{"setting", k.setting}, {"reason", k.reason}});
    j["capacity_search"]["max_utilization"] = req.max_utilization;
    j["capacity_search"]["output_len_cv"] = req.output_len_cv;
    j["capacity_search"]["ttft_checked_at"] = req.ttft_percentile > 0 ? nlohmann::json(req.ttft_percentile) : nlohmann::json("mean");
    j["capacity_queueing"] = kQueueing;
    j["error_band"] = band;
    return;
  }

  const double target_ms = req.tpot_target_s * 1e3;
  const std::string percentile = "p" + plain(reported_percentile(req));
  const std::string ttft_target =
      (req.ttft_percentile > 0 ? " and " + percentile + " TTFT" : std::string(" and TTFT")) + " + queueing wait <= " + fixed(req.ttft_target_s * 1e3, 0) + " ms";
  out << "\ncapacity plan: " << req.requests_per_s << " requests/s at TPOT <= " << target_ms << " ms"
      << (req.ttft_target_s > 0 ? ttft_target : std::string()) << ", utilisation <= " << plain(req.max_utilization) << " (prompt "
      << s.workload.prompt_len << ", output " << s.workload.output_len << " tokens), " << s.target.name << " on " << s.hardware.name
      << " with " << s.engine.name << "\n";
  out << "searched: TP " << list_text(tps);
  if (speculative) out << " x " << (s.plan.tree ? "the tree given" : "K " + list_text(ks));
  out << " x batch 1, 2, 4, ... (while the KV cache fits)\n";
  for (const auto& k : r.skipped) out << "  not evaluated: " << k.setting << ": " << k.reason << "\n";
  out << "\n  " << std::left << std::setw(22) << "" << std::right << std::setw(4) << "TP" << std::setw(4) << "K" << std::setw(7)
      << "batch" << std::setw(10) << "TPOT ms" << std::setw(10) << "replicas" << std::setw(9) << "devices" << std::setw(10) << "$/hour"
      << std::setw(16) << "$/M out tokens" << "\n";
  auto row = [&](const std::string& name, const std::optional<PlannedConfig>& c, bool with_k) {
    out << "  " << std::left << std::setw(22) << name << std::right;
    if (!c) {
      out << "  no configuration meets the targets within memory\n";
      return;
    }
    out << std::setw(4) << c->tp << std::setw(4) << (with_k ? std::to_string(c->k) : "-") << std::setw(7) << c->plan.batch
        << std::setw(10) << fixed(c->plan.prediction.tpot_s * 1e3, 2) << std::setw(10) << c->plan.replicas << std::setw(9)
        << c->plan.devices << std::setw(10) << fixed(c->plan.cost_per_hour, 2) << std::setw(16)
        << fixed(c->plan.cost_per_million_output_tokens, 3) << "\n";
  };
  if (speculative) row("cheapest: " + method_title(s.plan.method), r.best, !s.plan.tree);
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
    out << "\n  queueing per replica (M/G/c: Poisson arrivals, c = batch slots; "
        << (req.output_len_cv > 0 ? "output length cv " + plain(req.output_len_cv) : std::string("every output ") +
                                                                                        std::to_string(s.workload.output_len) + " tokens, C_s^2 = 0")
        << "):\n  " << std::left << std::setw(22) << "" << std::right << std::setw(7) << "util" << std::setw(9) << "P(wait)"
        << std::setw(10) << "wait ms" << std::setw(11) << (percentile + " wait") << std::setw(10) << "TTFT ms" << std::setw(12)
        << "TTFT+wait" << std::setw(11) << (percentile + " TTFT") << std::setw(7) << "C_s^2" << "\n";
    auto queue_row = [&](const std::string& name, const std::optional<PlannedConfig>& c) {
      if (!c) return;
      const ReplicaQueue& q = c->plan.load;
      out << "  " << std::left << std::setw(22) << name << std::right << std::setw(7) << fixed(q.queue.utilization, 3) << std::setw(9)
          << fixed(q.queue.p_wait, 3) << std::setw(10) << fixed(q.queue.mean_wait_s * 1e3, 1) << std::setw(11)
          << fixed(q.wait_at_percentile_s * 1e3, 1) << std::setw(10) << fixed(c->plan.prediction.ttft_s * 1e3, 1) << std::setw(12)
          << fixed(q.ttft_with_wait_s * 1e3, 1) << std::setw(11) << fixed(q.ttft_at_percentile_s * 1e3, 1) << std::setw(7)
          << fixed(q.queue.service_scv, 2) << "\n";
    };
    if (speculative) queue_row("cheapest: " + method_title(s.plan.method), r.best);
    queue_row(speculative ? "sequential decoding" : "cheapest: sequential", r.sequential);
  }
  out << "\n  per TP (the cheapest K and batch of each):\n  " << std::left << std::setw(5) << "TP";
  if (speculative) out << std::setw(40) << method_title(s.plan.method);
  out << "sequential\n";
  for (const int tp : tps) {
    const PlannedConfig* spec_best = nullptr;
    for (const auto& c : r.configs) {
      if (c.tp != tp) continue;
      if (!spec_best || (c.plan.feasible && (!spec_best->plan.feasible || cheaper_config(c, *spec_best)))) spec_best = &c;
    }
    const PlannedConfig* seq = nullptr;
    for (const auto& c : r.sequential_configs)
      if (c.tp == tp) seq = &c;
    out << "  " << std::left << std::setw(5) << tp;
    if (speculative) out << std::setw(40) << cell_text(spec_best, !s.plan.tree, target_ms);
    out << cell_text(seq, false, target_ms) << "\n";
  }
  for (const auto* list : {&r.configs, &r.sequential_configs})
    for (const auto& c : *list)
      if (!c.why_not.empty())
        out << "  not planned: TP " << c.tp << (c.k > 0 ? ", K " + std::to_string(c.k) : std::string()) << ": " << c.why_not << "\n";
  if (!band.is_null())
    out << "\n  prediction error: on " << band["results"].get<size_t>() << " published results it was never fitted to, the simulator is "
        << fixed(100 * band["mean_abs_relative_error"].get<double>(), 0) << "% off on average (largest "
        << fixed(100 * band["max_abs_relative_error"].get<double>(), 0) << "%; " << band["command"].get<std::string>() << ")\n";
  out << "  queueing: " << kQueueing << "\n";
}

}  // namespace specdec::cli
