#include "simulator/predictor.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/methods/registry.hpp"
#include "simulator/mla.hpp"

namespace specdec::sim {

namespace {

std::string storage_dtype(const Scenario& s) { return s.workload.dtype.empty() ? s.target.dtype : s.workload.dtype; }

// KV-cache bytes per element: the checkpoint's (kv_cache_quant_algo) while the run keeps its
// dtype, else the activations'.
double kv_bytes_of(const Scenario& s) {
  const std::string dtype = storage_dtype(s);
  if (dtype == s.target.dtype && s.target.kv_cache_bytes > 0) return s.target.kv_cache_bytes;
  return dtype == "fp32" ? 4.0 : 2.0;
}

ForwardParams base_params(const Scenario& s) {
  ForwardParams p;
  const std::string dtype = storage_dtype(s);
  p.weights = weight_bytes_of(s.target, dtype);
  p.act_bytes = dtype == "fp32" ? 4.0 : 2.0;
  p.kv_bytes = kv_bytes_of(s);
  p.batch = s.workload.batch;
  p.tp = s.workload.tp;
  p.dp = s.workload.dp_attention;
  p.ep = s.workload.ep;
  p.fusion = s.engine.fusion;
  return p;
}

// An MTP module's forward: every weight at the MTP class's width where the checkpoint stores the
// module apart (the embedding and LM head stay the target's, shared).
ForwardParams mtp_params(const ForwardParams& base) {
  ForwardParams p = base;
  if (base.weights[WeightClass::mtp] > 0) {
    p.weights = base.weights.uniform(WeightClass::mtp);
    p.weights[WeightClass::embedding] = base.weights[WeightClass::embedding];
    p.weights[WeightClass::lm_head] = base.weights[WeightClass::lm_head];
  }
  return p;
}

// Sums operator costs into a step; keeps the per-operator list only for breakdowns (a sweep's
// millions of scenarios need the sums alone).
struct Accumulator {
  const Scenario& s;
  bool keep_ops;
  double peak_flops;  // of the compute dtype
  std::array<double, kWeightClasses + 1> class_peak{};  // a weight class's matrix products (last: none)
  double launch;      // the engine's per-operator launch floor
  StepCost step;
  Accumulator(const Scenario& sc, bool keep)
      : s(sc), keep_ops(keep), peak_flops(sc.hardware.peak_flops(compute_dtype_for(sc.hardware, storage_dtype(sc)))),
        launch(sc.engine.launch_floor_s()) {
    if (keep_ops) step.ops.reserve(64);
    const auto dtypes = weight_compute_dtypes(sc.target, storage_dtype(sc));
    for (std::size_t c = 0; c <= kWeightClasses; ++c)
      class_peak[c] = c < kWeightClasses && !dtypes[c].empty()
                          ? sc.hardware.peak_flops(gemm_compute_dtype(sc.hardware, dtypes[c]))
                          : peak_flops;
  }
  void add(const std::vector<Operator>& ops, double* bucket) {
    const bool target = bucket == &step.verify_s;
    const bool draft = bucket == &step.draft_s;
    for (const auto& op : ops) {
      const double peak = class_peak[std::size_t(op.weight_class)];
      if (target) {
        step.verify_flops += op.flops * op.count;
        step.verify_bytes += op.bytes * op.count;
      } else if (draft) {
        step.draft_weight_bytes += op.weight_bytes * op.count;
        step.draft_flops += op.flops * op.count;
      }
      if (keep_ops) {
        step.ops.push_back(cost_operator_at_peak(op, s.hardware, peak, launch));
        *bucket += step.ops.back().total_s;
      } else {
        *bucket += operator_time(op, s.hardware, peak, launch) * op.count;
      }
    }
  }
  void overhead(const char* name, const char* phase, double count, double seconds) {
    if (count <= 0 || seconds <= 0) return;
    OpCost c = host_overhead(name, phase, count, seconds);
    step.overhead_s += c.total_s;
    if (keep_ops) step.ops.push_back(std::move(c));
  }
};

// One forward of an EAGLE-style head (or P-EAGLE's N layers) over `tokens` positions, `fc_rows`
// of which pass through fc, with `logit_rows` LM-head rows per sequence.
std::vector<Operator> head_forward(const Drafter& d, const ForwardParams& base, double tokens, double fc_rows,
                                   double logit_rows, const char* phase) {
  std::vector<Operator> ops;
  ops.reserve(24);
  ForwardParams full = base;
  full.tokens = tokens;
  full.logit_rows = logit_rows;
  // The head's own layers are not the checkpoint's: the run's width for a linear layer.
  full.weights = base.weights.uniform(WeightClass::other);
  full.weights[WeightClass::embedding] = base.weights[WeightClass::embedding];
  full.weights[WeightClass::lm_head] = base.weights[WeightClass::lm_head];
  const ForwardParams p = attention_group_params(full);  // a dense head runs per attention group
  append_embedding(ops, d.shape.hidden_size, p, phase);
  if (d.fc_in > 0 && fc_rows > 0) append_linear(ops, "fc", d.fc_in, d.shape.hidden_size, p.batch * fc_rows, p, phase);
  append_decoder_layers(ops, d.shape, 1, d.qkv_in, full, phase);
  if (d.num_layers > 1) append_decoder_layers(ops, d.shape, d.num_layers - 1, d.shape.hidden_size, full, phase);
  append_lm_head(ops, d.shape.hidden_size, d.lm_head_vocab, p, phase);
  return ops;
}

}  // namespace

WeightBytes mtp_module_weights(const WeightBytes& target) {
  return target[WeightClass::mtp] > 0 ? target.uniform(WeightClass::mtp) : target;
}

double routed_expert_bytes(const ModelShape& m, double layers, const WeightBytes& w) {
  if (!m.is_moe()) return 0.0;
  return layers * m.num_experts * 3.0 * m.hidden_size * m.expert_intermediate_size * w[WeightClass::routed_experts];
}

double mtp_module_weight_bytes(const ModelShape& layer, const WeightBytes& target) {
  const WeightBytes w = mtp_module_weights(target);
  const double H = layer.hidden_size;
  // The decoder layer (its two norms included), eh_proj (2H × H) and the enorm, hnorm and
  // shared_head.norm vectors; the embedding and the LM head are the target's (shared, as the
  // engines load them; DeepSeek-V3's checkpoint stores copies that vLLM and SGLang tie).
  double bytes = layer.attention_params_per_layer() * w[WeightClass::attention] +
                 (2.0 * H + 2.0 * H * H + 3.0 * H) * w[WeightClass::other];
  if (layer.is_moe()) {
    bytes += layer.num_experts * 3.0 * H * layer.expert_intermediate_size * w[WeightClass::routed_experts] +
             3.0 * H * layer.shared_expert_intermediate_size * w[WeightClass::shared_experts] +
             H * layer.num_experts * w[WeightClass::router];
  } else {
    bytes += 3.0 * H * layer.intermediate_size * w[WeightClass::dense_mlp];
  }
  return bytes;
}

double medusa_weight_bytes_per_device(const Drafter& d, double weight_bytes, int tp) {
  const double H = d.shape.hidden_size, V = d.shape.vocab_size;
  const double blocks = double(d.num_heads) * d.num_layers * (H * H + H);  // replicated
  const double heads = double(d.num_heads) * H * std::ceil(V / tp);        // vocabulary-parallel
  return (blocks + heads) * weight_bytes;
}

void check_tensor_parallel_degree(const ModelShape& m, int tp, const EngineSpec& engine) {
  // Engines split the query heads evenly over the devices and the KV heads evenly, or replicate
  // them when there are more devices than KV heads (vLLM's and SGLang's rule); an engine that pads
  // the heads to a multiple of the degree takes any (the operators price ceil(heads / tp) each).
  if (engine.pads_attention_heads) return;
  const auto splits = [&](int d) {
    return m.num_heads % d == 0 && (d <= m.num_kv_heads ? m.num_kv_heads % d == 0 : d % m.num_kv_heads == 0);
  };
  if (tp < 1 || splits(tp)) return;
  std::string valid;
  for (int d = 1; d <= std::min(m.num_heads, kMaxTensorParallel); ++d)
    if (splits(d)) valid += (valid.empty() ? "" : ", ") + std::to_string(d);
  throw Error("tensor-parallel degree " + std::to_string(tp) + " does not split model '" + m.name + "' (" +
              std::to_string(m.num_heads) + " attention heads, " + std::to_string(m.num_kv_heads) +
              " KV heads): engine '" + engine.name + "' splits the query heads evenly and the KV heads evenly or by "
              "replication; degrees that do: " + valid);
}

Parallelism parallelism_of(const Workload& w) { return Parallelism{w.tp, w.dp_attention, w.ep}; }

void validate_scenario(const Scenario& s) {
  const auto& w = s.workload;
  if (w.batch < 1) throw Error("batch size must be >= 1, got " + std::to_string(w.batch));
  if (w.prompt_len < 1) throw Error("prompt length must be >= 1, got " + std::to_string(w.prompt_len));
  if (w.output_len < 1) throw Error("output length must be >= 1, got " + std::to_string(w.output_len));
  if (w.tp < 1) throw Error("tensor-parallel degree must be >= 1, got " + std::to_string(w.tp));
  if (!s.engine_version.empty()) parse_engine_version(s.engine_version, "engine " + s.engine.name);
  // The same bounds as the decoder's (positions, draft depth) and the command line's.
  check_input_limit("simulator", "batch size", w.batch, kMaxSimulatedBatch);
  check_input_limit("simulator", "tensor-parallel degree", w.tp, kMaxTensorParallel);
  check_input_limit("simulator", "prompt length + output length", (long long)w.prompt_len + w.output_len, kMaxPositions);
  if (w.tp > 1 && s.hardware.interconnect_bandwidth_bytes_per_s <= 0)
    throw Error("hardware '" + s.hardware.name + "' has no interconnect, so tensor-parallel degree " +
                std::to_string(w.tp) + " is impossible");
  const Parallelism par = parallelism_of(w);
  validate_parallelism(par, s.target);
  // Attention heads split over one attention group's devices (all of them without DP attention).
  check_tensor_parallel_degree(s.target, par.attention_tp(), s.engine);
  dtype_bytes(storage_dtype(s));
  const Method m = s.plan.method;
  if (m == Method::sequential) return;
  if (!s.plan.tree) check_draft_limit("simulator", "draft length K", s.plan.k, kMaxDraftDepth);
  check_draft_limit("simulator", "the draft-free tree's nodes", s.plan.nodes, kMaxDraftNodes);
  const ShapeSupport shapes = method_shapes(m);
  if (s.plan.tree && draft_free(m))
    throw Error("method " + method_name(m) + " is draft-free: it " +
                (draft_free_tree(m) ? std::string("drafts its own tree from the token history (depth K") +
                                          (m == Method::ngram_tree ? ", up to its 'nodes' parameter's nodes" : ", up to K nodes") +
                                          "); give --k" + (m == Method::ngram_tree ? " and --method ngram-tree,nodes=N" : "")
                                    : std::string("drafts a chain of up to K tokens from the token history; give --k")) +
                ", not a tree");
  if (s.plan.tree && !shapes.static_tree && !shapes.dynamic_tree)
    throw Error("method " + method_name(m) + " drafts a chain (the method registry's shapes); give --k, not a tree");
  if (s.plan.tree && s.plan.dynamic_depth > 0 && !shapes.dynamic_tree)
    throw Error("method " + method_name(m) + " drafts no dynamic tree (the method registry's shapes): " +
                (m == Method::medusa ? "Medusa's candidates are the Cartesian product of its heads' top-k, a static tree; "
                                       "give --tree (e.g. medusa_mc_sim_7b_63) or --k"
                                     : "give --tree or --k"));
  if (!s.engine.runs(m)) {
    std::string runs;
    for (Method r : s.engine.methods) runs += (runs.empty() ? "" : ", ") + method_name(r);
    throw Error("engine '" + s.engine.name + "' does not run method " + method_name(m) + " (it runs: " + runs + ")");
  }
  if (s.plan.tree && !s.engine.trees)
    throw Error("engine '" + s.engine.name + "' verifies draft chains only, not trees: choose an engine with tree "
                "verification (e.g. --engine sglang or tensorrt-llm) or a chain (--k)");
  if (draft_free_tree(m) && (!s.engine.trees || s.engine.flatten_trees))
    throw Error("engine '" + s.engine.name + "' " +
                (s.engine.trees ? "verifies trees flattened into root-to-leaf paths, which needs the tree's shape; " +
                                      method_name(m) + " drafts a tree whose shape depends on the token history"
                                : std::string("verifies draft chains only, not trees; method ") + method_name(m) +
                                      " drafts a tree (its chain form is " +
                                      method_name(m == Method::ngram_tree ? Method::ngram : Method::suffix) + ")"));
  if (!(s.match_rate >= 0.0 && s.match_rate <= 1.0))
    throw Error("match rate (the share of steps that draft) must be in [0, 1], got " + std::to_string(s.match_rate));
  if (s.match_rate != 1.0 && !draft_free(m))
    throw Error("a match rate is for draft-free methods (ngram, suffix, ...): method " + method_name(m) +
                " drafts on every step");
  if (!s.drafter && !draft_free(m)) throw Error("method " + method_name(m) + " needs a drafter (--drafter)");
  if (s.drafter && s.drafter->method != m)
    throw Error("drafter '" + s.drafter->name + "' is a " + method_name(s.drafter->method) + " drafter, not " +
                method_name(m) + (m == Method::mtp || m == Method::medusa || s.drafter->method == Method::mtp ||
                                          s.drafter->method == Method::medusa
                                      ? " (MTP modules and Medusa heads are priced from their own shapes: give a drafter "
                                        "spec whose method is " + method_name(m) + ")"
                                      : std::string()));
  if (!s.acceptance && !s.measured_tokens_per_step)
    throw Error("method " + method_name(m) + " needs an acceptance model (--alpha, --acceptance, ...) or a measured AL");
  if (s.measured_tokens_per_step) {
    const double al = *s.measured_tokens_per_step;
    const int most = (s.plan.tree ? s.plan.tree->max_depth() : s.plan.k) + 1;
    if (!(al >= 1.0 && al <= most)) {
      std::ostringstream e;
      e << "measured AL " << al << " is outside [1, " << most << "]: a step of this "
        << (s.plan.tree ? "tree (depth " + std::to_string(most - 1) + ")" : "chain (K = " + std::to_string(most - 1) + ")")
        << " emits at least the bonus token and at most one token per depth plus it";
      throw Error(e.str());
    }
  }
  if (s.plan.tree) {
    // The registry's P-EAGLE takes static trees (one forward, per-position candidates); the cost
    // model of its head forward is written for a chain of K positions so far.
    if (m == Method::peagle) throw Error("P-EAGLE drafts a chain in one pass; tree drafting is not supported for it");
    if (s.plan.tree->size() < 1) throw Error("draft tree has no nodes");
    if (m == Method::medusa && s.plan.tree->max_depth() > s.drafter->num_heads)
      throw Error("Medusa drafter '" + s.drafter->name + "' has " + std::to_string(s.drafter->num_heads) +
                  " heads, one per draft depth; the tree's depth " + std::to_string(s.plan.tree->max_depth()) +
                  " is beyond them");
  } else {
    if (s.plan.k < 1) throw Error("draft length K must be >= 1 for method " + method_name(m) + ", got " +
                                  std::to_string(s.plan.k));
    if (m == Method::ngram_tree && draft_free_nodes(m, s.plan.k, s.plan.nodes) < 1)
      throw Error("method ngram-tree needs at least 1 draft node per step, got " + std::to_string(s.plan.nodes));
    if (m == Method::medusa && s.plan.k > s.drafter->num_heads)
      throw Error("Medusa drafter '" + s.drafter->name + "' has " + std::to_string(s.drafter->num_heads) +
                  " heads, one per draft depth; K = " + std::to_string(s.plan.k) + " is beyond them");
    if (m == Method::peagle && s.drafter->trained_depth > 0 && s.plan.k > s.drafter->trained_depth)
      throw Error("P-EAGLE drafter '" + s.drafter->name + "' was trained for up to " +
                  std::to_string(s.drafter->trained_depth) + " parallel positions; K = " + std::to_string(s.plan.k) +
                  " is beyond it");
  }
  if (m == Method::draft_model && s.drafter->shape.vocab_size != s.target.vocab_size)
    throw Error("draft model and target vocabularies differ");
}

// What one step of `plan` drafts, in the registry's terms. A dynamic plan's depth counts draft
// levels (SGLang's --speculative-num-steps); the registry's counts expansions after the first.
static StepShape step_shape(const DraftPlan& plan) {
  StepShape shape;
  shape.k = plan.k;
  if (plan.tree && plan.dynamic_depth > 0) {
    shape.kind = StepShape::Kind::dynamic_tree;
    shape.depth = plan.dynamic_depth - 1;
    shape.top_k = plan.dynamic_top_k;
  } else if (plan.tree) {
    const TreeShape& t = *plan.tree;
    shape.kind = StepShape::Kind::static_tree;
    shape.nodes_per_depth.assign(size_t(t.max_depth()), 0);
    shape.expanded_per_depth.assign(size_t(t.max_depth()), 0);
    std::vector<bool> has_children(size_t(t.size()), false);
    for (int n = 0; n < t.size(); ++n)
      if (t.parents[n] >= 0) has_children[size_t(t.parents[n])] = true;
    for (int n = 0; n < t.size(); ++n) {
      ++shape.nodes_per_depth[size_t(t.depths[n] - 1)];
      if (has_children[size_t(n)]) ++shape.expanded_per_depth[size_t(t.depths[n] - 1)];
    }
  }
  return shape;
}

// The step's host work (step_s + request_s per running request: scheduling, metadata, output
// processing), charged last. An engine that overlaps it with the device's forward in this kind of
// decoding pays only what exceeds everything else the step costs (its forwards and the per-forward,
// per-row and per-iteration terms, which run inside the device's step); otherwise it pays it in full.
static void charge_host_work(Accumulator& acc, const Scenario& s, bool speculative) {
  const HostWork& h = s.engine.host_work_for(s.engine_version);
  const bool hidden = speculative ? h.speculative : h.sequential;
  const int batch = s.workload.batch;
  if (!hidden) {
    acc.overhead("step_overhead", "overhead", 1, s.engine.step_overhead(s.engine_version));
    acc.overhead("request_overhead", "overhead", batch, h.request_s);
    return;
  }
  const double exposed = s.engine.host_seconds(s.engine_version, batch) - acc.step.total_s();
  acc.overhead("host_exposed", "overhead", 1, exposed);  // nothing when the device's step is longer
}

// The target's forward in one decoding step of `plan` (`base` at the step's context): one token per
// sequence (sequential) or the whole draft (verification). A draft-free step drafts only when the
// history matches (a share match_rate of the steps): 1 + h·nodes per sequence. Sets the tokens each
// sequence verifies.
static std::vector<Operator> target_step_ops(const Scenario& s, const DraftPlan& plan, const ForwardParams& base,
                                             double* verify_tokens) {
  const Method m = plan.method;
  *verify_tokens = 1;
  if (draft_free(m)) *verify_tokens = 1.0 + s.match_rate * draft_free_nodes(m, plan.k, plan.nodes);
  else if (m != Method::sequential) *verify_tokens = plan.tree ? plan.tree->size() + 1.0 : plan.k + 1.0;
  ForwardParams p = base;
  p.tokens = *verify_tokens;
  if (plan.tree && s.engine.flatten_trees) {
    // One sequence per root-to-leaf path, padded to the deepest: shared prefixes are recomputed
    // and every path reads the context again.
    p.batch = base.batch * plan.tree->num_leaves();
    p.tokens = plan.tree->max_depth() + 1.0;
    *verify_tokens = plan.tree->num_leaves() * p.tokens;
  }
  p.logit_rows = p.tokens;
  return model_forward_ops(s.target, p, m == Method::sequential ? "decode" : "verify");
}

// One step of `plan` (the scenario's own, or sequential decoding for the baseline without copying
// the scenario).
static StepCost step_cost(const Scenario& s, const DraftPlan& plan, double context, double tokens_per_step,
                          bool keep_ops = true) {
  Accumulator acc(s, keep_ops);
  ForwardParams base = base_params(s);
  base.context = context;
  const Method m = plan.method;

  // Target forward: one token (sequential) or the whole draft (verification).
  double verify_tokens = 1;
  const bool lookup = draft_free(m);
  acc.add(target_step_ops(s, plan, base, &verify_tokens), &acc.step.verify_s);
  acc.step.verify_tokens = verify_tokens;
  const double rows = double(s.workload.batch) * verify_tokens;  // per-row host time, saturating with rows
  acc.overhead("sampling", "overhead", rows, rows > 0 ? s.engine.sampling_seconds(rows, s.engine_version) / rows : 0.0);
  if (m == Method::sequential) {
    charge_host_work(acc, s, false);
    return acc.step;
  }
  const std::string mname = method_name(m);
  if (lookup) {
    // No drafter forward (the registry's schedule is empty): the engine's host lookup instead, and
    // the per-iteration overhead (acceptance, KV fix-up) every speculative step pays.
    const double t = s.engine.lookup_cost(mname).seconds(s.workload.batch, context, tokens_per_step);
    acc.overhead("draft_lookup", "overhead", 1, t);
    acc.step.lookup_s = t > 0 ? t : 0;
    acc.overhead("spec_step_overhead", "overhead", 1, s.engine.spec_step_overhead(mname, s.engine_version));
    charge_host_work(acc, s, true);
    return acc.step;
  }

  const Drafter& d = *s.drafter;
  // The drafter forwards of one step are the method registry's schedule (reference/methods): the
  // code's own forwards, which a test counts against the proposers. The first re-reads what the
  // last step emitted, `tokens_per_step` on average.
  CatchUp catch_up{tokens_per_step, 0.0};
  if (!plan.tree && s.acceptance && s.acceptance->answers(plan.k) && s.acceptance->answers(plan.k - 1))
    catch_up.all_accepted = s.acceptance->expected_tokens(plan.k) - s.acceptance->expected_tokens(plan.k - 1);
  const std::vector<double> level_tokens = method_schedule(m, step_shape(plan), catch_up).rows;
  for (size_t step = 0; step < level_tokens.size(); ++step) {
    const double tokens = level_tokens[step];
    if (m == Method::mtp) {
      // Forward f runs module f mod n: its weights are read once per forward, so n = 1 re-reads the
      // one module's weights every forward and n >= K reads K different modules' (the same bytes).
      ForwardParams p = base;
      p.tokens = tokens;
      p.logit_rows = step == 0 ? 1.0 : tokens;
      acc.add(mtp_module_forward(d.shape, mtp_params(p), "draft"), &acc.step.draft_s);
    } else if (m == Method::medusa) {
      // One pass of the heads the draft uses (its depth; the first of the checkpoint's heads).
      ForwardParams p = base;
      p.tokens = tokens;
      acc.add(medusa_heads_forward(d.shape.hidden_size, d.shape.vocab_size, acceptance_depth(plan), d.num_layers, p, "draft"),
              &acc.step.draft_s);
    } else if (m == Method::draft_model) {
      ForwardParams p = base;
      p.tokens = tokens;
      p.logit_rows = tokens;
      p.weights = weight_bytes_of(d.shape, storage_dtype(s));  // its own checkpoint
      acc.add(model_forward_ops(d.shape, p, "draft"), &acc.step.draft_s);
    } else if (m == Method::peagle) {
      acc.add(head_forward(d, base, tokens, catch_up.emitted, plan.k, "draft"), &acc.step.draft_s);
    } else {
      // EAGLE-1 applies fc at every step; EAGLE-3 only to the fused target features of step 1.
      const double fc_rows = (m == Method::eagle1 || step == 0) ? tokens : 0.0;
      acc.add(head_forward(d, base, tokens, fc_rows, step == 0 ? 1.0 : tokens, "draft"), &acc.step.draft_s);
    }
  }
  acc.step.draft_forwards = int(level_tokens.size());
  acc.overhead("draft_step_overhead", "overhead", acc.step.draft_forwards, s.engine.draft_step_overhead(mname, s.engine_version));
  if (plan.tree) {
    // What the tree adds beyond a chain of its depth: per level the top-k over cumulative scores;
    // a dynamic tree also reranks and rebuilds its mask and indices every step.
    const bool dynamic = plan.dynamic_depth > 0;
    acc.overhead("tree_levels", "overhead", acc.step.draft_forwards, s.engine.tree_cost.per_level_s);
    if (dynamic) acc.overhead("tree_build", "overhead", 1, s.engine.tree_cost.seconds(0, plan.tree->size(), true));
  }
  acc.overhead("spec_step_overhead", "overhead", 1, s.engine.spec_step_overhead(mname, s.engine_version));
  charge_host_work(acc, s, true);
  return acc.step;
}

int acceptance_depth(const DraftPlan& plan) {
  if (plan.tree) return plan.tree->max_depth();
  // A draft-free tree's acceptance is its own method's at depth K (measured on that tree); a tree
  // of fewer nodes than K is no deeper than its nodes.
  if (draft_free_tree(plan.method)) return std::min(plan.k, draft_free_nodes(plan.method, plan.k, plan.nodes));
  return plan.k;
}

StepCost decode_step_cost(const Scenario& s, double context, double tokens_per_step) {
  return step_cost(s, s.plan, context, tokens_per_step);
}

static StepCost prefill_step(const Scenario& s, bool keep_ops) {
  Accumulator acc(s, keep_ops);
  ForwardParams p = base_params(s);
  p.batch = 1;
  p.tokens = s.workload.prompt_len;
  p.logit_rows = 1;
  p.prefill = true;
  acc.add(model_forward_ops(s.target, p, "prefill"), &acc.step.verify_s);
  acc.overhead("step_overhead", "overhead", 1, s.engine.step_overhead(s.engine_version));
  if (s.plan.method != Method::sequential && s.drafter && !s.drafter->draft_free) {
    const Drafter& d = *s.drafter;
    if (d.method == Method::draft_model) {
      ForwardParams q = p;
      q.weights = weight_bytes_of(d.shape, storage_dtype(s));  // its own checkpoint
      acc.add(model_forward_ops(d.shape, q, "prefill"), &acc.step.draft_s);
    } else if (d.method == Method::mtp) {
      acc.add(mtp_module_forward(d.shape, mtp_params(p), "prefill"), &acc.step.draft_s);  // fills its cache over the prompt
    } else if (d.method == Method::medusa) {
      ForwardParams q = p;  // the heads read the prompt's last hidden state only
      q.tokens = 1;
      acc.add(medusa_heads_forward(d.shape.hidden_size, d.shape.vocab_size, acceptance_depth(s.plan), d.num_layers, q,
                                   "prefill"),
              &acc.step.draft_s);
    } else {
      acc.add(head_forward(d, p, p.tokens, p.tokens, 1, "prefill"), &acc.step.draft_s);
    }
  }
  acc.step.verify_tokens = p.tokens;
  return acc.step;
}

StepCost prefill_cost(const Scenario& s) { return prefill_step(s, true); }

std::vector<Operator> with_prompt_rows(std::vector<Operator> step, const std::vector<Operator>& prompt) {
  std::vector<bool> merged(step.size(), false);
  const size_t own = step.size();
  for (const Operator& q : prompt) {
    size_t i = 0;
    while (i < own && (merged[i] || std::strcmp(step[i].name, q.name) != 0 || step[i].count != q.count)) ++i;
    if (i == own) {
      step.push_back(q);  // no kernel of the step computes it (another form: its own kernel)
      continue;
    }
    merged[i] = true;
    Operator& m = step[i];
    // One kernel over both row sets: the work and the activations add, the weights are read once
    // (the larger set: a prompt's rows touch every expert a decode batch does and more).
    const double weights = std::max(m.weight_bytes, q.weight_bytes);
    if (weights > 0) m.gemm_rows = (m.gemm_rows * m.weight_bytes + q.gemm_rows * q.weight_bytes) / weights;
    m.bytes += q.bytes - std::min(m.weight_bytes, q.weight_bytes);
    m.weight_bytes = weights;
    m.flops += q.flops;
    m.kv_bytes += q.kv_bytes;
    m.comm_bytes += q.comm_bytes;
    m.gemm_cols = std::max(m.gemm_cols, q.gemm_cols);
    m.gemm_depth = std::max(m.gemm_depth, q.gemm_depth);
    m.kernels = std::max(m.kernels, q.kernels);
  }
  return step;
}

double interleaved_prefill_s(const Scenario& s) {
  const double context = s.workload.prompt_len + 0.5 * s.workload.output_len;  // as predict() decodes at
  ForwardParams base = base_params(s);
  base.context = context;
  double verify_tokens = 1;
  const std::vector<Operator> step = target_step_ops(s, s.plan, base, &verify_tokens);
  ForwardParams p = base_params(s);
  p.batch = 1;
  p.tokens = s.workload.prompt_len;
  p.logit_rows = 1;
  p.prefill = true;
  Accumulator alone(s, false), with(s, false);
  alone.add(step, &alone.step.verify_s);
  with.add(with_prompt_rows(step, model_forward_ops(s.target, p, "prefill")), &with.step.verify_s);
  // The drafter's pass over the prompt keeps its own forward (the heads' and draft models' kernels
  // are not the target's).
  return std::max(0.0, with.step.verify_s - alone.step.verify_s) + prefill_step(s, false).draft_s;
}

void set_dynamic_tree(DraftPlan& plan, const AcceptanceModel& acc, int total_tokens, int depth, int top_k) {
  plan.tree = best_tree(acc, total_tokens, depth, top_k);  // throws on a bad value
  plan.dynamic_depth = depth;
  plan.dynamic_top_k = top_k;
}

Prediction predict(const Scenario& s, bool breakdown) {
  validate_scenario(s);
  Prediction r;
  r.method = s.plan.method;
  r.k = s.plan.tree ? s.plan.tree->max_depth() : s.plan.k;
  r.tree_nodes = s.plan.tree ? s.plan.tree->size()
                 : draft_free_tree(s.plan.method) ? draft_free_nodes(s.plan.method, s.plan.k, s.plan.nodes)
                                                  : 0;
  const double context = s.workload.prompt_len + 0.5 * s.workload.output_len;  // mean over the output

  if (s.plan.method == Method::sequential) {
    r.tokens_per_step = 1.0;
  } else if (s.measured_tokens_per_step) {
    r.tokens_per_step = *s.measured_tokens_per_step;
  } else if (s.plan.tree) {
    r.tokens_per_step = tree_expected_tokens(*s.plan.tree, *s.acceptance);
  } else {
    const int depth = acceptance_depth(s.plan);
    if (!s.acceptance->answers(depth))
      throw Error("acceptance model '" + s.acceptance->describe() + "' has no AL for K = " + std::to_string(depth) +
                  ": choose a K it answers (--k) or search them (--best-k)");
    r.tokens_per_step = s.acceptance->expected_tokens(depth);
  }
  r.step = step_cost(s, s.plan, context, r.tokens_per_step, breakdown);
  r.tpot_s = r.step.total_s() / r.tokens_per_step;

  r.sequential_tpot_s =
      s.plan.method == Method::sequential ? r.tpot_s : step_cost(s, DraftPlan{}, context, 1.0, false).total_s();
  r.speedup = r.sequential_tpot_s / r.tpot_s;
  r.throughput_tokens_per_s = s.workload.batch / r.tpot_s;
  r.ttft_s = prefill_step(s, false).total_s();

  // Memory per device: weights split by tp (KV heads replicated when tp > nkv, a latent cache always).
  // Under DP attention or EP (simulator/parallelism.hpp) the routed experts are split over all tp
  // devices (E / EP whole experts each, or their columns), everything else over one attention
  // group's tp / dp, and a device keeps the KV cache of its group's sequences only.
  const Parallelism par = parallelism_of(s.workload);
  const double Ta = par.attention_tp();
  const std::string dtype = storage_dtype(s);
  const WeightBytes target_w = weight_bytes_of(s.target, dtype);
  const double wb = target_w[WeightClass::other];  // a drafter head's own layers
  const double kvb = kv_bytes_of(s);
  const double act = dtype == "fp32" ? 4.0 : 2.0;
  auto weights = [&](const ModelShape& m) {
    const WeightBytes w = weight_bytes_of(m, dtype);
    // vLLM keeps a 16-bit copy of a quantised checkpoint's W_UK and W_UV for the absorbed products.
    const double mla_copies =
        m.is_mla() && w[WeightClass::attention] != act ? m.num_layers * mla_up_projection_params(m) * act : 0.0;
    const double all = total_weight_bytes(m, w) + mla_copies;
    if (par.plain()) return all / s.workload.tp;
    const double routed = routed_expert_bytes(m, m.moe_layers(), w);
    return (all - routed) / Ta + routed / par.ranks;
  };
  r.weight_bytes_per_device = weights(s.target);
  if (s.drafter && s.plan.method != Method::sequential && !s.drafter->draft_free) {
    const Drafter& d = *s.drafter;
    if (d.method == Method::draft_model) {
      r.weight_bytes_per_device += weights(d.shape);
    } else if (d.method == Method::mtp) {
      const double module = mtp_module_weight_bytes(d.shape, target_w);
      if (par.plain()) {
        r.weight_bytes_per_device += d.num_modules * module / s.workload.tp;
      } else {
        const double routed = routed_expert_bytes(d.shape, 1, mtp_module_weights(target_w));
        r.weight_bytes_per_device += d.num_modules * ((module - routed) / Ta + routed / par.ranks);
      }
    } else if (d.method == Method::medusa) {
      r.weight_bytes_per_device += medusa_weight_bytes_per_device(d, wb, par.attention_tp());
    } else {
      double head = d.num_layers * (d.shape.attention_params_per_layer() * d.qkv_in / d.shape.hidden_size +
                                    d.shape.mlp_params_per_layer_total()) +
                    double(d.fc_in) * d.shape.hidden_size;
      if (d.lm_head_vocab != s.target.vocab_size) head += double(d.lm_head_vocab) * d.shape.hidden_size;
      r.weight_bytes_per_device += head * wb / par.attention_tp();
    }
  }
  r.kv_bytes_per_device = double(sequences_per_attention_group(s.workload.batch, par.dp_attention)) *
                          (s.workload.prompt_len + s.workload.output_len) * s.target.num_layers *
                          s.target.kv_elements_per_token_per_layer(par.attention_tp()) * kvb;
  r.fits_memory = r.weight_bytes_per_device + r.kv_bytes_per_device <= s.hardware.memory_bytes;

  r.verify_intensity = r.step.verify_bytes > 0 ? r.step.verify_flops / r.step.verify_bytes : 0;
  r.ridge_point = s.hardware.ridge_point(compute_dtype_for(s.hardware, storage_dtype(s)));
  check_prediction_finite(r, s);
  return r;
}

void require_finite_result(double value, const std::string& what, const std::string& context) {
  if (!std::isfinite(value)) {
    std::ostringstream e;
    e << context << ": the predicted " << what << " is " << value
      << " (not a finite number): the specs' numbers are out of any plausible range";
    throw Error(e.str());
  }
}

void check_prediction_finite(const Prediction& r, const Scenario& s) {
  const std::string context = "simulator (" + s.target.name + " on " + s.hardware.name + " with " + s.engine.name + ")";
  const std::pair<const char*, double> values[] = {
      {"AL", r.tokens_per_step},
      {"TPOT", r.tpot_s},
      {"TTFT", r.ttft_s},
      {"throughput", r.throughput_tokens_per_s},
      {"sequential TPOT", r.sequential_tpot_s},
      {"speedup", r.speedup},
      {"step time", r.step.total_s()},
      {"draft time", r.step.draft_s},
      {"verify time", r.step.verify_s},
      {"overhead time", r.step.overhead_s},
      {"weight bytes per device", r.weight_bytes_per_device},
      {"KV bytes per device", r.kv_bytes_per_device},
      {"verify intensity", r.verify_intensity},
      {"ridge point", r.ridge_point},
  };
  for (const auto& [what, v] : values) require_finite_result(v, what, context);
  // A step takes time: a zero TPOT would make the speedup and throughput infinite.
  if (!(r.tpot_s > 0)) require_finite_result(std::numeric_limits<double>::infinity(), "TPOT's inverse", context);
  for (const OpCost& c : r.step.ops) require_finite_result(c.total_s, std::string("time of operator ") + c.op.name, context);
}

}  // namespace specdec::sim
