#pragma once
// Capacity planning: for a request rate, prompt and output lengths and latency targets, the batch
// size per replica, the replicas needed and the cost per million output tokens; and the planner
// that searches tensor-parallel degree × draft length × batch for the cheapest configuration,
// with sequential decoding planned the same way beside it.
//
// Queueing is not modelled: a replica is taken to serve batch / (TTFT + output_len × TPOT)
// requests/s, i.e. its batch always full and the load perfectly smooth (utilisation 100%).
// Bursty arrivals need headroom above the plan.
#include <optional>
#include <string>
#include <vector>

#include "simulator/predictor.hpp"
#include "simulator/search.hpp"

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
  bool needs_too_many_devices = false;  // a batch met the targets, but only beyond kMaxPlannedDevices
};

// Tries batch sizes 1, 2, 4, ... and picks the one that serves the load with the fewest replicas
// (ties: the smaller batch, for latency). The scenario's workload.batch is ignored. The rate and
// targets must be finite; a load that needs more than kMaxPlannedDevices devices
// (reference/core/input_limits.hpp) is an Error saying so.
CapacityPlan plan_capacity(const Scenario& s, const CapacityRequest& req);

// One (TP, K) of a search, planned over batch sizes.
struct PlannedConfig {
  int tp = 1;
  int k = 0;            // 0: sequential decoding (or the scenario's tree / measured shape)
  CapacityPlan plan;    // its cheapest batch (plan.feasible false: none meets the targets)
  std::string why_not;  // set when the configuration could not be planned at all
};

struct CapacitySearch {
  std::optional<PlannedConfig> best;        // the cheapest feasible: fewest devices, then the lowest TPOT
  std::optional<PlannedConfig> sequential;  // sequential decoding's cheapest (none: not feasible)
  std::vector<PlannedConfig> configs;       // every speculative (TP, K), in search order
  std::vector<PlannedConfig> sequential_configs;  // every sequential TP
  std::vector<SkippedSetting> skipped;      // settings not evaluated (K the acceptance cannot answer)
};

// Plans `s` at every TP of `tps` and, for a speculative chain, every K of `ks` (a tree or a
// measured AL keeps the scenario's one shape: pass its K alone), and sequential decoding at every
// TP. The request is checked first (its errors are thrown); a (TP, K) that cannot be planned (TP
// beyond the instance or not dividing the model's heads, more devices than specdec plans for) is
// kept with its reason.
CapacitySearch search_capacity(const Scenario& s, const CapacityRequest& req, const std::vector<int>& tps,
                               const std::vector<int>& ks);

// Of two feasible plans, whether `a` is the cheaper: fewer devices, then the lower TPOT.
bool cheaper_config(const PlannedConfig& a, const PlannedConfig& b);

// The tensor-parallel degrees a search tries by default: powers of two up to one instance.
std::vector<int> default_tensor_parallel_degrees(const HardwareSpec& hw);

}  // namespace specdec::sim
