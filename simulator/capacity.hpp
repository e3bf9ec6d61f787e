#pragma once
// Capacity planning: for a request rate, prompt and output lengths and latency targets, the batch
// size per replica, the replicas needed and the cost per million output tokens.
#include <vector>

#include "simulator/predictor.hpp"

namespace specdec::sim {

struct CapacityRequest {
  double requests_per_s = 1;  // offered load
  double tpot_target_s = 0.05;
  double ttft_target_s = 0;   // 0 = no TTFT target
  int max_batch = 1024;
  double price_per_device_hour = -1;  // < 0: the hardware spec's price
};

struct CapacityOption {
  int batch = 0;
  Prediction prediction;
  double requests_per_s_per_replica = 0;  // batch / (TTFT + output_len × TPOT)
  bool feasible = false;                  // meets the latency targets and fits in memory
};

struct CapacityPlan {
  bool feasible = false;
  int batch = 0;
  int replicas = 0;            // model replicas (each `tp` devices)
  int devices = 0;
  double cost_per_hour = 0;    // USD
  double cost_per_million_output_tokens = 0;  // USD; 0 when the price is unknown
  Prediction prediction;       // at the chosen batch
  std::vector<CapacityOption> options;  // batch sizes tried (powers of two up to max_batch)
};

// Tries batch sizes 1, 2, 4, ... and picks the one that serves the load with the fewest replicas
// (ties: the smaller batch, for latency). The scenario's workload.batch is ignored. The rate and
// targets must be finite; a load that needs more than kMaxPlannedDevices devices
// (reference/core/input_limits.hpp) is an Error saying so.
CapacityPlan plan_capacity(const Scenario& s, const CapacityRequest& req);

}  // namespace specdec::sim
