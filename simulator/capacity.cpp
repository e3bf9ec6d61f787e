#include "simulator/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"

namespace specdec::sim {

namespace {

void check_request(const CapacityRequest& req) {
  // Written so that NaN fails too; an infinite load or target has no plan.
  if (!(req.requests_per_s > 0 && std::isfinite(req.requests_per_s)))
    throw Error("capacity planning: request rate must be > 0 requests/s and finite");
  if (!(req.tpot_target_s > 0 && std::isfinite(req.tpot_target_s)))
    throw Error("capacity planning: TPOT target must be > 0 seconds and finite");
  if (!(req.ttft_target_s >= 0 && std::isfinite(req.ttft_target_s)))
    throw Error("capacity planning: TTFT target must be >= 0 seconds (0 = none) and finite");
  if (req.max_batch < 1) throw Error("capacity planning: max batch must be >= 1");
  if (!(req.price_per_device_hour < 0 || std::isfinite(req.price_per_device_hour)))
    throw Error("capacity planning: the price per device-hour must be finite");
}

std::string too_many_devices_message(const CapacityRequest& req) {
  std::ostringstream e;
  e << "capacity planning: serving " << req.requests_per_s << " requests/s within the targets needs more than "
    << kMaxPlannedDevices << " devices, more than specdec plans for; see docs/reliability.md";
  return e.str();
}

CapacityPlan plan_batches(const Scenario& base, const CapacityRequest& req) {
  const double price = req.price_per_device_hour >= 0 ? req.price_per_device_hour : base.hardware.price_per_device_hour();
  const int max_batch = std::min(req.max_batch, kMaxSimulatedBatch);
  CapacityPlan plan;
  double best_replicas = 0;  // in double: a load far beyond any plan must not wrap an int
  bool too_many = false;     // some batch met the targets, but only with more than kMaxPlannedDevices
  for (int b = 1; b <= max_batch; b *= 2) {
    Scenario s = base;
    s.workload.batch = b;
    CapacityOption o;
    o.batch = b;
    o.prediction = predict(s);
    const double per_request_s = o.prediction.ttft_s + s.workload.output_len * o.prediction.tpot_s;
    o.requests_per_s_per_replica = b / per_request_s;
    o.feasible = o.prediction.fits_memory && o.prediction.tpot_s <= req.tpot_target_s &&
                 (req.ttft_target_s == 0 || o.prediction.ttft_s <= req.ttft_target_s);
    if (o.feasible) {
      const double replicas = std::ceil(req.requests_per_s / o.requests_per_s_per_replica - 1e-12);
      if (!(replicas * base.workload.tp <= double(kMaxPlannedDevices))) {
        too_many = true;
        o.feasible = false;
      } else if (!plan.feasible || replicas < best_replicas) {
        plan.feasible = true;
        plan.batch = b;
        best_replicas = replicas;
        plan.prediction = o.prediction;
      }
    }
    plan.options.push_back(o);
    if (!o.prediction.fits_memory) break;  // larger batches need even more memory
    if (b > max_batch / 2) break;          // the next doubling would pass the bound (or wrap)
  }
  plan.needs_too_many_devices = !plan.feasible && too_many;
  if (plan.feasible) {
    plan.replicas = int(best_replicas);
    plan.devices = plan.replicas * base.workload.tp;
    plan.cost_per_hour = plan.devices * price;
    const double tokens_per_hour = req.requests_per_s * base.workload.output_len * 3600.0;
    plan.cost_per_million_output_tokens = price > 0 ? plan.cost_per_hour / tokens_per_hour * 1e6 : 0.0;
    const std::string context = "capacity planning";
    require_finite_result(plan.cost_per_hour, "cost per hour", context);
    require_finite_result(plan.cost_per_million_output_tokens, "cost per million output tokens", context);
  }
  return plan;
}

PlannedConfig plan_one(Scenario s, const CapacityRequest& req, int tp, int k) {
  PlannedConfig c;
  c.tp = tp;
  c.k = k;
  s.workload.tp = tp;
  if (k > 0) s.plan.k = k;
  try {
    c.plan = plan_batches(s, req);
    if (c.plan.needs_too_many_devices) c.why_not = too_many_devices_message(req);
  } catch (const Error& e) {
    c.why_not = e.what();  // e.g. a TP that does not divide the model's heads
  }
  return c;
}

}  // namespace

CapacityPlan plan_capacity(const Scenario& base, const CapacityRequest& req) {
  check_request(req);
  CapacityPlan plan = plan_batches(base, req);
  if (plan.needs_too_many_devices) throw Error(too_many_devices_message(req));
  return plan;
}

bool cheaper_config(const PlannedConfig& a, const PlannedConfig& b) {
  if (a.plan.devices != b.plan.devices) return a.plan.devices < b.plan.devices;
  return a.plan.prediction.tpot_s < b.plan.prediction.tpot_s;
}

std::vector<int> default_tensor_parallel_degrees(const HardwareSpec& hw) {
  std::vector<int> tps;
  for (int tp = 1; tp <= hw.devices_per_instance; tp *= 2) tps.push_back(tp);
  return tps;
}

CapacitySearch search_capacity(const Scenario& s, const CapacityRequest& req, const std::vector<int>& tps,
                               const std::vector<int>& ks) {
  check_request(req);
  if (tps.empty()) throw Error("capacity planning: no tensor-parallel degree to search");
  CapacitySearch out;
  const bool speculative = s.plan.method != Method::sequential;
  std::vector<int> chain_ks;  // the Ks the scenario's acceptance answers
  if (speculative) {
    if (ks.empty()) throw Error("capacity planning: no draft length K to search");
    for (const int k : ks) {
      if (const std::string why = why_k_is_not_evaluated(s, k); !why.empty()) {
        out.skipped.push_back({"K = " + std::to_string(k), why});
        continue;
      }
      chain_ks.push_back(k);
    }
    if (chain_ks.empty())
      throw Error("capacity planning: none of the Ks asked for can be evaluated: " + out.skipped.front().reason);
  }
  for (const int tp : tps) {
    for (const int k : chain_ks) {
      out.configs.push_back(plan_one(s, req, tp, k));
      const PlannedConfig& c = out.configs.back();
      if (c.plan.feasible && (!out.best || cheaper_config(c, *out.best))) out.best = c;
    }
  }
  // Sequential decoding planned the same way: the number the method is judged against.
  Scenario seq = s;
  seq.plan = DraftPlan{};
  seq.plan.method = Method::sequential;
  seq.drafter.reset();
  seq.acceptance.reset();
  seq.measured_tokens_per_step.reset();
  for (const int tp : tps) {
    out.sequential_configs.push_back(plan_one(seq, req, tp, 0));
    const PlannedConfig& c = out.sequential_configs.back();
    if (c.plan.feasible && (!out.sequential || cheaper_config(c, *out.sequential))) out.sequential = c;
  }
  if (!speculative) out.best = out.sequential;
  // No answer, and the reason is the size of the load or a scenario no TP can run: said as an error.
  const std::vector<PlannedConfig>& searched = speculative ? out.configs : out.sequential_configs;
  if (!out.best) {
    for (const auto& c : searched)
      if (c.plan.needs_too_many_devices) throw Error(c.why_not);
    if (std::all_of(searched.begin(), searched.end(), [](const PlannedConfig& c) { return !c.why_not.empty(); }))
      throw Error("capacity planning: no configuration can be planned: TP " + std::to_string(searched.front().tp) + ": " +
                  searched.front().why_not);
  }
  return out;
}

}  // namespace specdec::sim
