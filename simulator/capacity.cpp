#include "simulator/capacity.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"

namespace specdec::sim {

CapacityPlan plan_capacity(const Scenario& base, const CapacityRequest& req) {
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
  if (!plan.feasible && too_many) {
    std::ostringstream e;
    e << "capacity planning: serving " << req.requests_per_s << " requests/s within the targets needs more than "
      << kMaxPlannedDevices << " devices, more than specdec plans for; see docs/reliability.md";
    throw Error(e.str());
  }
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

}  // namespace specdec::sim
