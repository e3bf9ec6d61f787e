#pragma once
// Capacity planning as `specdec simulate --capacity-rate R --tpot-target-ms T` and Python's
// specdec.plan_capacity run it: the request read from the options (the queueing settings among
// them), which TPs and Ks to search by default, the search (simulator/capacity.hpp) with sequential
// decoding beside it, each answer's queueing estimate, the simulator's measured error band, and the
// answer as JSON. The command line prints the same answer as tables.
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "simulator/capacity.hpp"
#include "simulator/option_spelling.hpp"
#include "simulator/scenario_options.hpp"
#include "simulator/spec_library.hpp"

namespace specdec::sim {

// Chains are searched over K = 1..kDefaultPlannedDepth unless K or the best K's list is given:
// deeper chains rarely pay at the batch sizes a capacity plan runs.
inline constexpr int kDefaultPlannedDepth = 8;

// What every plan says about its queueing estimate: the model and what it assumes.
extern const char* const kCapacityQueueing;

struct CapacityPlanning {
  CapacityRequest request;
  std::vector<int> tps, ks;  // searched (ks empty for sequential decoding)
  std::vector<Parallelism> layouts;  // searched, over the tps (capacity_search_layouts)
  std::vector<DynamicTreeSetting> trees;  // the EAGLE-2 trees searched (--best-tree), else empty
  CapacitySearch search;
  nlohmann::json error_band;  // null when the bundled evaluation sets are absent
};

// Plans `s` (the scenario of `o`, as simulate_modes leaves it) for `o.capacity`, which must be
// set. Errors name options as `spelling` writes them.
CapacityPlanning run_capacity_planning(const ScenarioOptions& o, const Scenario& s, const SpecLibrary& specs,
                                       const OptionSpelling& spelling);

// Writes the plan into `out`: "capacity", "capacity_sequential", "capacity_search",
// "capacity_queueing" and "error_band", as `specdec simulate --json` prints them. Each feasible
// configuration carries its TPOT under load (tpot_ms at the full batch with the prompts' prefill,
// tpot_at_mean_occupancy_ms, mean_occupancy, decode_tpot_ms without prompts, step_ms,
// decode_step_ms, prefill_ms_per_prompt, prefill_share, prompts_per_step, prefill_tokens_per_step),
// what set its replicas (replicas_set_by) and its queue (utilization, p_wait, queue_wait_ms,
// ttft_with_wait_ms, percentile, queue_wait_at_percentile_ms, ttft_at_percentile_ms, service_s,
// service_scv); "capacity_search" the settings (max_utilization, output_len_cv, ttft_checked_at,
// tpot_checked_at, prefill: "interleaved" or "separate").
void capacity_planning_json(const CapacityPlanning& plan, const Scenario& s, nlohmann::json& out);

// The TPs a capacity search tries: those given (each >= 1 and within one instance), sorted and
// once each, or (none given) every power of two up to one instance of the hardware.
std::vector<int> capacity_tensor_parallel_degrees(const std::optional<std::vector<int>>& tps, const HardwareSpec& hw,
                                                  const OptionSpelling& spelling);

// The layouts a capacity search plans: capacity_layouts (simulator/capacity.hpp) over the TPs of
// capacity_tensor_parallel_degrees, restricted by `c.dp_attention` and `c.ep` when given. Each D
// and P given must be >= 1, a D must divide one of the TPs searched and a P must be 1 or one of
// them (else nothing would be searched with it: an error naming the option); TPs left without a
// layout are not searched.
std::vector<Parallelism> capacity_search_layouts(const CapacityOptions& c, const ModelShape& target, const HardwareSpec& hw,
                                                 const OptionSpelling& spelling);

}  // namespace specdec::sim
