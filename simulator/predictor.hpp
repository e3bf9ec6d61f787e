#pragma once
// The simulator's pure function: (target shape, drafter, hardware, engine, workload, method
// configuration, acceptance model) -> TTFT, TPOT, throughput, speedup, AL and a per-operator
// breakdown of one decoding step.
#include <optional>
#include <string>
#include <vector>

#include "simulator/acceptance.hpp"
#include "simulator/cost_model.hpp"
#include "simulator/drafter_spec.hpp"
#include "simulator/engine_spec.hpp"
#include "simulator/hardware_spec.hpp"
#include "simulator/method.hpp"
#include "simulator/model_shape.hpp"
#include "simulator/parallelism.hpp"
#include "simulator/tree_shape.hpp"

namespace specdec::sim {

struct Workload {
  int batch = 1;          // concurrent sequences decoded together
  int prompt_len = 512;   // tokens
  int output_len = 256;   // tokens
  int tp = 1;             // tensor-parallel degree (devices per model replica)
  std::string dtype;      // weights / activations / KV dtype; empty = the target's torch_dtype
  int dp_attention = 1;   // attention data-parallel groups over the tp devices (simulator/parallelism.hpp)
  int ep = 1;             // expert-parallel degree: 1 or tp
};

struct DraftPlan {
  Method method = Method::sequential;
  int k = 0;                      // chain: draft tokens per step (P-EAGLE: parallel depth)
  std::optional<TreeShape> tree;  // tree drafting instead of a chain (methods whose registry entry takes trees)
  // A dynamic tree (EAGLE-2; SGLang's --speculative-eagle-topk) is drafted beam-style: `depth`
  // drafter steps, each after the first expanding the `top_k` best frontier nodes, and then
  // reranked to `tree`. 0 = a static tree: one step per depth of `tree` over that depth's nodes.
  int dynamic_depth = 0;
  int dynamic_top_k = 0;
  // A draft-free tree method's node budget (ngram-tree's `nodes` parameter; 0 = the registry's
  // default). Draft-free methods draft their own tree from the history, so `tree` stays empty.
  int nodes = 0;
};

// A dynamic (EAGLE-2) tree plan: the `total_tokens − 1` best candidates under `acc`
// (best_tree), drafted beam-style with `depth` steps over `top_k` frontier nodes.
void set_dynamic_tree(DraftPlan& plan, const AcceptanceModel& acc, int total_tokens, int depth, int top_k);

struct Scenario {
  ModelShape target;
  std::optional<Drafter> drafter;  // required unless sequential or draft-free (then optional: no model)
  HardwareSpec hardware;
  EngineSpec engine;               // default: "ideal" (no host overheads)
  // The engine's release the scenario runs (e.g. "0.4.4"): selects whether it hides its per-step host
  // work and its size (EngineSpec::host_work_for); empty = the current release.
  std::string engine_version;
  Workload workload;
  DraftPlan plan;
  AcceptancePtr acceptance;        // required unless sequential or measured_tokens_per_step is set
  // AL measured for exactly this plan (a tree's, say, from a recorded run), counting the bonus
  // token: used instead of the acceptance model's.
  std::optional<double> measured_tokens_per_step;
  // Draft-free methods: the share of steps that find a match and draft; the others verify the bonus
  // token alone, so a step verifies 1 + match_rate · nodes tokens per sequence on average. The
  // acceptance model covers every step (with_match_rate applies the same share to it).
  double match_rate = 1.0;
};

// One decoding step (sequential: one target forward; speculative: drafting + verification).
struct StepCost {
  std::vector<OpCost> ops;
  double draft_s = 0;
  double verify_s = 0;    // the target forward (sequential: the decode forward)
  double overhead_s = 0;  // host/engine overheads
  double lookup_s = 0;    // of overhead_s: a draft-free method's host lookup (n-gram scan, suffix tree)
  int draft_forwards = 0;
  double draft_weight_bytes = 0;  // weights the drafter forwards of one step read, per device
  double draft_flops = 0;         // of the drafter forwards, per device
  double verify_tokens = 1;  // tokens per sequence in the target forward
  double verify_flops = 0, verify_bytes = 0;  // of the target forward, per device
  double total_s() const { return draft_s + verify_s + overhead_s; }
};

struct Prediction {
  Method method = Method::sequential;
  int k = 0;
  int tree_nodes = 0;            // 0 for chains
  double tokens_per_step = 1;    // AL, counting the bonus token
  double tpot_s = 0;             // time per output token of one sequence
  double ttft_s = 0;             // prefill of one prompt (+ drafter prefill) + one step overhead
  double throughput_tokens_per_s = 0;  // output tokens per second per replica (batch / TPOT)
  double sequential_tpot_s = 0;  // the same workload decoded sequentially
  double speedup = 1;            // sequential TPOT / this TPOT
  double weight_bytes_per_device = 0;
  double kv_bytes_per_device = 0;  // at prompt + output tokens for the whole batch
  bool fits_memory = true;
  double verify_intensity = 0;   // FLOP/byte of the verification forward
  double ridge_point = 0;        // FLOP/byte above which the hardware is compute bound
  StepCost step;                 // breakdown of one step at the mean decoding context
};

// Throws unless `tp` splits the model's attention heads as `engine` splits them: the query heads
// evenly, the KV heads evenly or by replication (the message lists the degrees that do), or any
// degree for an engine that pads the heads (EngineSpec::pads_attention_heads).
void check_tensor_parallel_degree(const ModelShape& m, int tp, const EngineSpec& engine);

// The workload's layout: its devices, attention DP groups and expert-parallel degree.
Parallelism parallelism_of(const Workload& w);

// Checks the scenario (K ≥ 1 for speculative methods, tp within the instance and splitting the
// target's heads, drafter present,
// P-EAGLE depth within its trained depth, the engine runs the method (and trees), ...); throws
// specdec::Error on the first problem.
void validate_scenario(const Scenario& s);

// The depth whose AL the acceptance model must answer for this plan: K for chains (and draft-free
// trees, at most their node count), the tree's depth for trees.
int acceptance_depth(const DraftPlan& plan);

// Cost of one decoding step at `context` cached tokens, with `tokens_per_step` the expected AL
// (it sets how many tokens EAGLE drafters re-read after verification).
StepCost decode_step_cost(const Scenario& s, double context, double tokens_per_step);
// Prefill of one prompt (target and, for speculative methods, the drafter).
StepCost prefill_cost(const Scenario& s);
// What one prompt's prefill adds to a decode step of the scenario when its rows run inside the
// step's target forward (chunked prefill, EngineSpec::interleaves_prefill): the step's target
// forward with the prompt's rows minus without them — each matrix product's weights are read once
// for both row sets, so a memory-bound step carries a prompt's rows for their compute alone — plus
// the drafter's pass over the prompt as a forward of its own. The step is the scenario's batch at
// the mean decoding context.
double interleaved_prefill_s(const Scenario& s);
// The operators of `step` with `prompt`'s rows run in the same kernels: an operator of `prompt`
// whose name and count match one of `step` is merged into it (FLOPs, activations, KV and collective
// bytes add; weights are read once; the products' rows add), any other is appended.
std::vector<Operator> with_prompt_rows(std::vector<Operator> step, const std::vector<Operator>& prompt);

// Bytes of the routed experts of `layers` MoE layers of `m` (all of them, at `w`'s routed-expert
// width); 0 for a dense model.
double routed_expert_bytes(const ModelShape& m, double layers, const WeightBytes& w);
// The class widths an MTP module is stored at: the target's, or all the MTP class's where the
// checkpoint stores the module apart.
WeightBytes mtp_module_weights(const WeightBytes& target);
// Bytes of one MTP module's weights (the decoder layer of `layer`'s kind, eh_proj, its norms; the
// embedding and LM head are the target's) at the target's class widths, or all at the MTP class's
// where the checkpoint stores the module apart.
double mtp_module_weight_bytes(const ModelShape& layer, const WeightBytes& target);
// Bytes of all of a Medusa checkpoint's heads on one device of `tp`: the residual blocks
// (replicated) and the projections (vocabulary-parallel).
double medusa_weight_bytes_per_device(const Drafter& d, double weight_bytes, int tp);

// Throws an Error naming `what` and `context` unless `value` is finite: every number the simulator
// reports is checked, so absurd specs end in an error rather than an inf or NaN row.
void require_finite_result(double value, const std::string& what, const std::string& context);
// Every reported number of `r` finite (and its TPOT > 0); predict() calls it.
void check_prediction_finite(const Prediction& r, const Scenario& s);

// `breakdown`: keep the per-operator list in Prediction::step.ops (a sweep needs the sums only).
Prediction predict(const Scenario& s, bool breakdown = true);

}  // namespace specdec::sim
