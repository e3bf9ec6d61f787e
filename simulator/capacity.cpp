#include "simulator/capacity.hpp"

#include <cmath>

#include "reference/core/error.hpp"

namespace specdec::sim {

CapacityPlan plan_capacity(const Scenario& base, const CapacityRequest& req) {
  if (!(req.requests_per_s > 0)) throw Error("capacity planning: request rate must be > 0 requests/s");
  if (!(req.tpot_target_s > 0)) throw Error("capacity planning: TPOT target must be > 0 seconds");
  if (req.ttft_target_s < 0) throw Error("capacity planning: TTFT target must be >= 0 seconds (0 = none)");
  if (req.max_batch < 1) throw Error("capacity planning: max batch must be >= 1");
  const double price = req.price_per_device_hour >= 0 ? req.price_per_device_hour : base.hardware.price_per_device_hour();
  CapacityPlan plan;
  for (int b = 1; b <= req.max_batch; b *= 2) {
    Scenario s = base;
    s.workload.batch = b;
    CapacityOption o;
    o.batch = b;
    o.prediction = predict(s);
    const double per_request_s = o.prediction.ttft_s + s.workload.output_len * o.prediction.tpot_s;
    o.requests_per_s_per_replica = b / per_request_s;
    o.feasible = o.prediction.fits_memory && o.prediction.tpot_s <= req.tpot_target_s &&
                 (req.ttft_target_s == 0 || o.prediction.ttft_s <= req.ttft_target_s);
    plan.options.push_back(o);
    if (o.feasible) {
      const int replicas = int(std::ceil(req.requests_per_s / o.requests_per_s_per_replica - 1e-12));
      if (!plan.feasible || replicas < plan.replicas) {
        plan.feasible = true;
        plan.batch = b;
        plan.replicas = replicas;
        plan.prediction = o.prediction;
      }
    }
    if (!o.prediction.fits_memory) break;  // larger batches need even more memory
  }
  if (plan.feasible) {
    plan.devices = plan.replicas * base.workload.tp;
    plan.cost_per_hour = plan.devices * price;
    const double tokens_per_hour = req.requests_per_s * base.workload.output_len * 3600.0;
    plan.cost_per_million_output_tokens = price > 0 ? plan.cost_per_hour / tokens_per_hour * 1e6 : 0.0;
  }
  return plan;
}

}  // namespace specdec::sim
