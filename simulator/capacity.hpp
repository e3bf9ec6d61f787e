#pragma once
// Capacity planning: for a request rate, prompt and output lengths and latency targets, the batch
// size per replica, the replicas needed and the cost per million output tokens; and the planner
// that searches tensor-parallel degree × parallel layout (data-parallel attention, expert
// parallelism: simulator/parallelism.hpp) × draft length × batch for the cheapest configuration,
// with sequential decoding planned the same way beside it.
//
// Each replica carries its share of the load, λ = rate / replicas requests/s, and every request's
// prompt is prefilled on it: interleaved into the decode steps or as forwards of their own between
// them (the engine's interleaves_prefill), either way lengthening the steps of the requests already
// decoding. The step is the fixed point T = D / (1 − λ·c) (simulator/batching.hpp, step_under_load:
// D the decode step, c one prompt's prefill); TPOT = T / AL at the full batch is what the TPOT target
// is checked against, and a replica whose prompts alone take its whole time (λ·c >= 1) cannot keep
// up. Beside it each plan reports the TPOT at the mean occupancy: the sequences decoding on average,
// n = λ · output_len · TPOT(n) by Little's law, fewer than the batch while slots are idle.
//
// Each replica is a queue (simulator/queueing.hpp): Poisson arrivals at λ, its batch slots the
// servers (continuous batching), a request holding one for S = TTFT + output_len × TPOT (TPOT at the
// full batch, prefill included). The replicas are the fewest that keep the replica up with its
// prompts, TPOT within the target, utilisation ρ = a / batch at or below max_utilization (always < 1:
// at ρ >= 1 the queue grows without bound) and, with a TTFT target, TTFT plus the queueing wait
// (mean, or the wait at ttft_percentile) within it. TTFT under load (ttft_under_load): half the step
// in progress when the request takes its slot, then its prefill — inside the next step, which carries
// its rows (T + c), or as a forward of its own at the next step boundary (c). Assumed: Poisson
// arrivals; a prompt prefilled in one step (no chunk budget splits it); TPOT at the full batch,
// conservative while slots are idle; service time varying only through the output length (C_s² = 0
// for the workload's one output_len).
#include <optional>
#include <string>
#include <vector>

#include "simulator/batching.hpp"
#include "simulator/parallelism.hpp"
#include "simulator/predictor.hpp"
#include "simulator/queueing.hpp"
#include "simulator/search.hpp"

namespace specdec::sim {

// A plan keeps each replica's utilisation at most this by default: a plan at 0.85 stays stable
// (ρ < 1) with service times up to 1/0.85 − 1 = 18% longer than predicted, which covers the
// simulator's mean error on published results it was never fitted to (docs/simulator.md).
inline constexpr double kDefaultMaxUtilization = 0.85;
// Output lengths' coefficient of variation at most this: exponential lengths have 1; Allen–Cunneen
// is a two-moment approximation, not to be trusted on tails far heavier.
inline constexpr double kMaxOutputLenCv = 4;
// Interarrival times' coefficient of variation at most this: the same two-moment limit.
inline constexpr double kMaxArrivalCv = 4;

struct CapacityRequest {
  double requests_per_s = 1;  // offered load
  double tpot_target_s = 0.05;
  double ttft_target_s = 0;   // 0 = no TTFT target; else TTFT + queueing wait must be within it
  int max_batch = 1024;
  double price_per_device_hour = -1;  // < 0: the hardware spec's price
  double max_utilization = kDefaultMaxUtilization;  // per replica, in (0, 1)
  double output_len_cv = 0;   // output length's coefficient of variation; 0: every output is output_len
  double arrival_cv = 1;      // interarrival times' coefficient of variation; 1: Poisson arrivals
  double ttft_percentile = 0; // 0: the TTFT target holds the mean wait; in (0, 100): the wait at it
};

// The percentile a plan reports its wait at: the one the TTFT target is checked at, else 99.
double reported_percentile(const CapacityRequest& req);

// One replica under its share of the load: its steps with the prompts' prefill, and its queue.
struct ReplicaQueue {
  StepUnderLoad step;              // the full batch's decode step and the prefill it carries
  double tpot_s = 0;               // at the full batch, prefill included: what the TPOT target is checked against
  double mean_occupancy = 0;       // sequences decoding on average, n = λ · output_len · TPOT(n) (Little's law)
  double tpot_at_mean_occupancy_s = 0;  // TPOT of a step of max(1, mean_occupancy) sequences, prefill included
  QueueEstimate queue;             // service time S, C_s², utilisation, P(wait), mean wait
  double percentile = 99;          // of the wait below (reported_percentile)
  double wait_at_percentile_s = 0;
  double ttft_s = 0;               // TTFT under load, once the request has a slot (ttft_under_load)
  double ttft_with_wait_s = 0;     // TTFT + mean wait
  double ttft_at_percentile_s = 0; // TTFT + wait at the percentile
};

// A limit a replica count can break; a plan lists those that one replica fewer would break (what
// sets its replica count).
enum class ReplicaLimit {
  prefill_capacity,  // the prompts' prefill alone takes the replica's whole time (λ·c >= 1)
  tpot_target,       // TPOT at the full batch, prefill included, beyond the target
  max_utilization,   // ρ beyond max_utilization
  ttft_target,       // TTFT + queueing wait beyond the TTFT target
};
// "prefill_capacity", "tpot_target", "max_utilization", "ttft_target".
std::string replica_limit_name(ReplicaLimit l);

struct CapacityOption {
  int batch = 0;
  Prediction prediction;                  // the decode step alone (no prompts): TPOT, TTFT, memory
  double prefill_s_per_prompt = 0;        // c: what one prompt's prefill adds to the steps (prefill_seconds_per_prompt)
  // The most requests/s one replica serves at ρ = 1, its prompts' prefill included: the root of
  // λ·(TTFT(λ) + output_len · TPOT(λ)) = batch with TPOT(λ) = TPOT / (1 − λ·c) and TTFT(λ) as
  // ttft_under_load at the step D / (1 − λ·c).
  double requests_per_s_per_replica = 0;
  bool feasible = false;                  // meets the latency targets and fits in memory
  int replicas = 0;                       // when feasible: the fewest that meet the targets
  ReplicaQueue load;                      // when feasible: at those replicas
  std::vector<ReplicaLimit> replicas_set_by;  // when feasible: what one replica fewer would break
};

// The mean TTFT of a request that has its slot, on a replica whose steps last `step_s` (T): half the
// step in progress when it arrives (the mean residual of steps of one length under Poisson
// arrivals), then its prompt's prefill: where the engine interleaves prefill, the whole next step,
// which carries the prompt's rows besides everything else (T + c); where it does not, a forward of
// its own (c, its step overhead included) at the next step boundary. At no load T is the decode
// step alone; the prediction's TTFT (one prompt on an idle replica) is the forward alone.
double ttft_under_load(const CapacityOption& o, const Scenario& s, double step_s);

struct CapacityPlan {
  bool feasible = false;
  int batch = 0;
  int replicas = 0;            // model replicas (each `tp` devices)
  int devices = 0;
  double cost_per_hour = 0;    // USD
  double cost_per_million_output_tokens = 0;  // USD; 0 when the price is unknown
  Prediction prediction;       // at the chosen batch, the decode step alone
  ReplicaQueue load;           // each replica's steps and queue at the chosen batch and replicas
  std::vector<ReplicaLimit> replicas_set_by;  // what one replica fewer would break
  std::vector<CapacityOption> options;  // batch sizes tried (powers of two up to max_batch)
  bool needs_too_many_devices = false;  // a batch met the targets, but only beyond kMaxPlannedDevices
  // Set with needs_too_many_devices when the prompts' prefill is the only reason: without it some
  // batch would carry the load within kMaxPlannedDevices. Says what the prefill costs at that batch.
  std::string too_many_because_of_prefill;
};

// Tries batch sizes 1, 2, 4, ... and picks the one that serves the load with the fewest replicas
// (ties: the smaller batch, for latency). The scenario's workload.batch is ignored. The rate and
// targets must be finite, max_utilization in (0, 1), output_len_cv in [0, kMaxOutputLenCv],
// ttft_percentile 0 or in (0, 100); a load that needs more than kMaxPlannedDevices devices
// (reference/core/input_limits.hpp) is an Error saying so, and saying when the prompts' prefill is
// why.
CapacityPlan plan_capacity(const Scenario& s, const CapacityRequest& req);

// One replica of `o` (its batch, its scenario `s`) when `replicas` share the request's load: the
// full batch's step with the prompts' prefill, TPOT, the queue, and the limits of `req` it breaks
// (empty: it meets them all). When the replica cannot keep up with its prompts only the step is set.
struct ReplicaCheck {
  ReplicaQueue load;
  std::vector<ReplicaLimit> broken;
  bool ok() const { return broken.empty(); }
};
ReplicaCheck check_replicas(const CapacityOption& o, const Scenario& s, const CapacityRequest& req, double replicas);

// One (layout, K) of a search, planned over batch sizes.
struct PlannedConfig {
  int tp = 1;
  int dp_attention = 1; // the layout over the tp devices (simulator/parallelism.hpp); 1 and 1: plain TP
  int ep = 1;
  int k = 0;            // 0: sequential decoding (or the scenario's tree / measured shape)
  std::string tree;     // an EAGLE-2 tree searched: "total/depth/top_k" (empty: a chain of K or the one shape)
  CapacityPlan plan;    // its cheapest batch (plan.feasible false: none meets the targets)
  std::string why_not;  // set when the configuration could not be planned at all
  Parallelism layout() const { return Parallelism{tp, dp_attention, ep}; }
};

struct CapacitySearch {
  std::optional<PlannedConfig> best;        // the cheapest feasible: fewest devices, then the lowest TPOT
  std::optional<PlannedConfig> sequential;  // sequential decoding's cheapest (none: not feasible)
  std::vector<PlannedConfig> configs;       // every speculative (layout, K), in search order
  std::vector<PlannedConfig> sequential_configs;  // every sequential layout
  std::vector<SkippedSetting> skipped;      // settings not evaluated (K the acceptance cannot answer)
  // The search's cost: batch sizes priced over every configuration, speculative and sequential (each
  // a prediction of the decode step and one of a prompt's prefill).
  long long batches_priced = 0;
};

// A search plans at most this many configurations (layouts × shapes, sequential decoding's layouts
// included): each prices up to 11 batch sizes (1..1024) and the replicas of each, about a
// millisecond per configuration on one core, so the largest default search (every layout of a
// mixture-of-experts model on a 64-device instance, K = 1..8: 495 configurations) answers in under a
// second and the bound in a few. A larger one is refused, saying how to narrow it.
inline constexpr long long kMaxCapacityConfigurations = 2048;

// The configurations a search of `layouts` × `shapes` plans: every speculative one and sequential
// decoding at every layout (shapes 0: sequential decoding alone).
long long capacity_configurations(size_t layouts, size_t shapes);

// Plans `s` at every layout of `layouts` (each its TP's devices, attention DP and EP) and, for a
// speculative chain, every K of `ks` (a tree or a measured AL keeps the scenario's one shape: pass
// its K alone), and sequential decoding at every layout. The request is checked first (its errors
// are thrown); a (layout, K) that cannot be planned (TP beyond the instance or not dividing the
// model's heads, a layout the model cannot run, more devices than specdec plans for) is kept with
// its reason. More than kMaxCapacityConfigurations configurations is an error.
CapacitySearch search_capacity_layouts(const Scenario& s, const CapacityRequest& req, const std::vector<Parallelism>& layouts,
                                       const std::vector<int>& ks);
// search_capacity_layouts over plain tensor parallelism at every TP of `tps`.
CapacitySearch search_capacity(const Scenario& s, const CapacityRequest& req, const std::vector<int>& tps,
                               const std::vector<int>& ks);

// Plans `s` at every layout of `layouts` and every EAGLE-2 tree of `trees`, each drafted from
// s.acceptance (which must give per-rank probabilities, as --dynamic-tree asks), and sequential
// decoding at every layout: the tree that is cheapest under the load, not the one that is fastest at
// batch 1. A setting the method or the acceptance cannot draft is kept in `skipped` with its reason.
CapacitySearch search_capacity_trees_layouts(const Scenario& s, const CapacityRequest& req,
                                             const std::vector<Parallelism>& layouts,
                                             const std::vector<DynamicTreeSetting>& trees);
CapacitySearch search_capacity_trees(const Scenario& s, const CapacityRequest& req, const std::vector<int>& tps,
                                     const std::vector<DynamicTreeSetting>& trees);

// The layouts a search plans at each TP of `tps`, in order (TP, then attention DP, then EP, plain
// TP first): attention DP D over the divisors of the TP and EP P in {1, TP} — on a
// mixture-of-experts target every such layout, on a dense one plain TP alone — restricted to the
// Ds of `dp_attention` and the Ps of `ep` when given; a P of `ep` between 1 and the TP that divides
// it (EP ranks of several devices) is planned with D = 1 only (a D or P that does not divide a TP
// has no layout at that TP; a TP left with none is not searched). Whether a
// layout can run (P dividing the experts, EP on a dense model, attention TP splitting the heads) is
// the planning's to say (validate_scenario), kept with the configuration as its reason.
std::vector<Parallelism> capacity_layouts(const std::vector<int>& tps, const ModelShape& target,
                                          const std::optional<std::vector<int>>& dp_attention,
                                          const std::optional<std::vector<int>>& ep);
// Plain tensor parallelism at every TP of `tps`.
std::vector<Parallelism> plain_layouts(const std::vector<int>& tps);

// "60/7/10": a tree setting as the searches print it.
std::string tree_setting_text(const DynamicTreeSetting& t);

// Of two feasible plans, whether `a` is the cheaper: fewer devices, then the lower TPOT (at the full
// batch, prefill included).
bool cheaper_config(const PlannedConfig& a, const PlannedConfig& b);

// The tensor-parallel degrees a search tries by default: powers of two up to one instance.
std::vector<int> default_tensor_parallel_degrees(const HardwareSpec& hw);

}  // namespace specdec::sim
