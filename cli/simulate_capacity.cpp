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
    "not modelled: a replica is taken to run full batches under a perfectly smooth load (100% utilisation); "
    "bursty arrivals queue, so leave headroom above the plan";

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
    j["capacity_queueing"] = kQueueing;
    j["error_band"] = band;
    return;
  }

  const double target_ms = req.tpot_target_s * 1e3;
  out << "\ncapacity plan: " << req.requests_per_s << " requests/s at TPOT <= " << target_ms << " ms"
      << (req.ttft_target_s > 0 ? " and TTFT <= " + fixed(req.ttft_target_s * 1e3, 0) + " ms" : std::string()) << " (prompt "
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
