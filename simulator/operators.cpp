#include "simulator/operators.hpp"

#include <algorithm>
#include <cmath>

#include "simulator/expert_popularity.hpp"
#include "simulator/mla.hpp"
#include "simulator/parallelism.hpp"

namespace specdec::sim {

namespace {

double ceil_div(double a, double b) { return std::ceil(a / b); }

// An elementwise or normalisation kernel: reads `in` and writes `out` elements per token.
Operator elementwise(const char* name, double width, double reads, double flops_per_elem,
                     const ForwardParams& p, const char* phase, double count) {
  Operator op;
  op.name = name;
  op.phase = phase;
  op.count = count;
  const double n = p.batch * p.tokens * width;
  op.flops = flops_per_elem * n;
  op.bytes = (reads + 1.0) * n * p.act_bytes;
  return op;
}

Operator collective(const char* name, double payload_bytes, double ring_factor, const ForwardParams& p,
                    const char* phase, double count) {
  Operator op;
  op.name = name;
  op.phase = phase;
  op.count = count;
  op.collective = true;
  op.comm_bytes = payload_bytes * ring_factor * (p.tp - 1) / p.tp;
  return op;
}

// A collective whose bytes per device are already known (the all-to-alls, the DP gathers).
Operator collective_of(const char* name, double comm_bytes, const char* phase, double count) {
  Operator op;
  op.name = name;
  op.phase = phase;
  op.count = count;
  op.collective = true;
  op.comm_bytes = comm_bytes;
  return op;
}

// The routed experts' kernels (kernels.fusion.moe_expert_kernels), with a quantisation of the
// activations before each of the two grouped products over block-scaled FP8 experts.
void set_expert_kernels(Operator& ex, const ForwardParams& p) {
  ex.kernels = p.fusion.moe_expert_kernels;
  const double w = p.weights[WeightClass::routed_experts];
  if (p.fusion.fp8_activation_quant && w >= 1.0 && w < 1.01) ex.kernels += 2;
}

// The routed experts of `layers` MoE layers under data-parallel attention or expert parallelism
// (simulator/parallelism.hpp), with the collectives that bring the tokens to them and back: `full`
// is the whole replica's forward, `group` one attention group's.
void append_parallel_experts(std::vector<Operator>& ops, const ModelShape& m, double layers, const ForwardParams& full,
                             const ForwardParams& group, const char* phase) {
  const double H = m.hidden_size;
  const double E = m.num_experts;
  const double k = m.experts_per_token;
  const double N = full.tp;
  const double eb = full.weights[WeightClass::routed_experts];
  const double a = full.act_bytes;
  const double rows_all = full.batch * full.tokens;         // every group's tokens
  const double rows_group = group.batch * group.tokens;     // the busiest group's
  Operator ex;
  ex.name = "moe.experts";
  ex.phase = phase;
  ex.count = layers;
  ex.gemm_depth = H;
  ex.weight_class = WeightClass::routed_experts;
  if (full.ep == 1) {
    // Data-parallel attention, experts column-split over all N devices (vLLM's default
    // allgather_reducescatter all2all backend; SGLang's DP attention without DeepEP): the groups'
    // tokens are gathered onto every device, each device computes its column share of the experts
    // over all of them, and a reduce-scatter sums the partial outputs and returns each group's rows.
    // A device receives the other groups' rows, (D − 1)/D of them; the ring reduce-scatter sends
    // (N − 1)/N of the full output.
    const double D = full.dp;
    ops.push_back(collective_of("moe.all_gather.dp", rows_all * H * a * (D - 1.0) / D, phase, layers));
    const double Ie = ceil_div(m.expert_intermediate_size, N);
    const double touched = expected_experts_touched(E, k, full.batch, full.tokens, m.expert_locality, m.expert_load_cv);
    ex.flops = 2.0 * rows_all * k * 3.0 * H * Ie;
    ex.gemm_rows = rows_all * k / touched;
    ex.gemm_cols = touched * 2.0 * Ie;
    ex.weight_bytes = touched * 3.0 * H * Ie * eb;
    ex.bytes = ex.weight_bytes + rows_all * k * (2.0 * H + 3.0 * Ie) * a;
    set_expert_kernels(ex, full);
    ops.push_back(ex);
    ops.push_back(collective_of("moe.reduce_scatter.dp", rows_all * H * a * (N - 1.0) / N, phase, layers));
    return;
  }
  // Expert parallelism: each EP rank holds E / P whole experts, column-split over its N / P devices
  // (one device each at P = N), and computes the token-expert rows routed to them; the busiest rank
  // (simulator/parallelism.hpp) sets the step.
  const ExpertRankLoad load =
      busiest_expert_rank(E, k, full.ep, full.batch, full.tokens, m.expert_locality, m.expert_load_cv);
  const double Ie = ceil_div(m.expert_intermediate_size, N / full.ep);
  const bool dispatch = full.dp > 1;  // without DP attention every device already holds every token
  const double Ta = group.tp;
  const double sent = std::ceil(rows_group / Ta);  // a group's tokens, split over its devices [approximate]
  // Dispatch: each token's hidden state to every other device holding one of its experts, once per
  // device (DeepEP dispatches a token once to a rank whatever number of its experts the rank holds,
  // DeepEP issue 48); combine: one partial sum per such device back. Both at the activation width
  // [approximate: the DeepSeek-V3 technical report, arXiv 2412.19437, dispatches FP8 activations].
  const double a2a = sent * remote_ranks_per_token(E, k, full.ep) * H * a;
  if (dispatch) ops.push_back(collective_of("moe.dispatch", a2a, phase, layers));
  ex.flops = 2.0 * load.rows * 3.0 * H * Ie;
  ex.gemm_rows = load.touched > 0 ? load.rows / load.touched : 0.0;
  ex.gemm_cols = load.touched * 2.0 * Ie;
  ex.weight_bytes = load.touched * 3.0 * H * Ie * eb;
  ex.bytes = ex.weight_bytes + load.rows * (2.0 * H + 3.0 * Ie) * a;
  set_expert_kernels(ex, full);
  ops.push_back(ex);
  if (dispatch) {
    ops.push_back(collective_of("moe.combine", a2a, phase, layers));
    // The group's devices each got back their share of its tokens: gathered again [approximate].
    if (Ta > 1) ops.push_back(collective_of("moe.all_gather.group", rows_group * H * a * (Ta - 1.0) / Ta, phase, layers));
  }
}

}  // namespace

void add_fp8_activation_quant(Operator& op, const ForwardParams& p) {
  // The router's product runs unquantised in the engines (SGLang's MoEGate, vLLM's gate: quant_config None).
  if (!p.fusion.fp8_activation_quant || op.weight_class == WeightClass::count ||
      op.weight_class == WeightClass::router || op.gemm_rows <= 0)
    return;
  // Block-scaled FP8 weights are stored at 1 byte plus an fp32 scale per 128 × 128 block.
  const double w = p.weights[op.weight_class];
  if (!(w >= 1.0 && w < 1.01)) return;
  op.kernels += 1;  // per_token_group_quant_fp8: reads the 16-bit input, writes FP8 and the scales
  op.bytes += op.gemm_rows * op.gemm_depth * (p.act_bytes + 1.0);
}

ForwardParams attention_group_params(const ForwardParams& p) {
  ForwardParams g = p;
  if (p.dp > 1) {
    g.batch = sequences_per_attention_group(p.batch, p.dp);
    g.tp = p.tp / p.dp;
  }
  g.dp = 1;
  g.ep = 1;
  return g;
}

double expert_miss_probability(double q, double batch, double tokens, double locality) {
  const double first = std::min(tokens, 1.0);
  const double later = std::max(tokens - 1.0, 0.0);
  return std::pow(1.0 - q, batch * first) * std::pow(1.0 - (1.0 - locality) * q, batch * later);
}

double expected_experts_touched(double experts, double per_token, double batch, double tokens, double locality,
                                double load_cv) {
  if (experts <= 0 || per_token <= 0 || batch <= 0 || tokens <= 0) return 0.0;
  // A sequence's first token selects expert i with probability q_i; each later token repeats its
  // predecessor's experts with probability rho, else selects afresh. Expert i is then missed by the
  // first token with probability 1 - q_i and by each later one with 1 - (1 - rho)·q_i (it is missed
  // unless a fresh selection takes it); sequences route independently, so the misses multiply over
  // the batch. Uniform routing has q_i = k/E for every expert: the closed form.
  const auto missed = [&](double q) { return expert_miss_probability(q, batch, tokens, locality); };
  if (load_cv == 0.0) return experts * (1.0 - missed(std::min(per_token / experts, 1.0)));
  // Skewed popularity: q_i = min(1, k · weight_i / E) with the weights of expert_popularity.
  double touched = 0;
  for (double w : expert_popularity(int(experts), load_cv)) touched += 1.0 - missed(std::min(per_token * w / experts, 1.0));
  return touched;
}

void append_linear(std::vector<Operator>& ops, const char* name, double in, double out, double rows,
                   const ForwardParams& p, const char* phase, double count, WeightClass cls) {
  // y: (rows, out) = x: (rows, in) · Wᵀ, W: (out, in)
  Operator op;
  op.name = name;
  op.phase = phase;
  op.count = count;
  op.flops = 2.0 * rows * in * out;
  op.gemm_rows = rows;
  op.gemm_cols = out;
  op.gemm_depth = in;
  op.weight_class = cls;
  op.weight_bytes = in * out * p.weights[cls];
  op.bytes = op.weight_bytes + rows * (in + out) * p.act_bytes;
  add_fp8_activation_quant(op, p);
  ops.push_back(op);
}

void append_embedding(std::vector<Operator>& ops, int hidden, const ForwardParams& p, const char* phase,
                      double count) {
  Operator op;
  op.name = "embedding";
  op.phase = phase;
  op.count = count;
  const double n = p.batch * p.tokens;
  op.bytes = n * hidden * (p.weights[WeightClass::embedding] + p.act_bytes);
  ops.push_back(op);
}

void append_decoder_layers(std::vector<Operator>& ops, const ModelShape& m, double layers, int qkv_in,
                           const ForwardParams& full, const char* phase) {
  // Everything but the routed experts runs per attention group (full itself under plain TP).
  const ForwardParams p = attention_group_params(full);
  const double H = m.hidden_size;
  const double hd = m.head_dim;
  const double tp = p.tp;
  const double heads = ceil_div(m.num_heads, tp);      // query heads per device
  const double kv_heads = ceil_div(m.num_kv_heads, tp);  // replicated when tp > nkv
  const double rows = p.batch * p.tokens;

  // Fused into the previous layer's last all-reduce (kernels.fusion.allreduce_norm) under TP.
  const bool ar_norm = p.fusion.allreduce_norm && p.tp > 1;
  if (!ar_norm) ops.push_back(elementwise("input_norm", H, 1, 4, p, phase, layers));
  if (m.is_mla()) {
    append_mla_attention(ops, m, layers, qkv_in, p, phase);  // up to the heads' outputs
  } else {
    append_linear(ops, "qkv_proj", qkv_in, (heads + 2 * kv_heads) * hd, rows, p, phase, layers, WeightClass::attention);
    ops.push_back(elementwise("rope", (heads + kv_heads) * hd, 1, 6, p, phase, layers));

    // Attention: each new token attends to the cached context and to the new tokens before it
    // (on average (T + 1) / 2 of them; tree masks see fewer, which this slightly overstates).
    auto attention = [&](double fraction, double window) {
      double keys = p.context + (p.tokens + 1.0) / 2.0;
      double cached = p.context + p.tokens;
      if (window > 0) {
        keys = std::min(keys, window);
        cached = std::min(cached, window + p.tokens);
      }
      Operator op;
      op.name = window > 0 ? "attention.sliding" : "attention";
      op.phase = phase;
      op.count = layers * fraction;
      op.flops = 4.0 * rows * keys * heads * hd;  // QKᵀ and PV
      op.kv_bytes = p.batch * (cached * 2.0 * kv_heads * hd) * kv_element_bytes(p);  // K and V read once per sequence
      op.bytes = op.kv_bytes + rows * 2.0 * heads * hd * p.act_bytes;        // q in, output out
      if (op.count > 0) ops.push_back(op);
    };
    const double sliding = m.sliding_window > 0 ? m.sliding_layer_fraction : 0.0;
    attention(1.0 - sliding, 0);
    attention(sliding, m.sliding_window);
  }

  // The heads' outputs (heads · hd, or heads · v_head_dim under multi-head latent attention) -> H.
  append_linear(ops, "o_proj", heads * (m.is_mla() ? m.v_head_dim : hd), H, rows, p, phase, layers,
                WeightClass::attention);
  if (p.tp > 1) ops.push_back(collective("all_reduce.attn", rows * H * p.act_bytes, 2.0, p, phase, layers));
  if (!ar_norm) ops.push_back(elementwise("post_attention_norm", H, 2, 5, p, phase, layers));  // residual add + norm

  if (!m.is_moe()) {
    const double I = ceil_div(m.intermediate_size, tp);
    append_linear(ops, "mlp.gate_up_proj", H, 2 * I, rows, p, phase, layers, WeightClass::dense_mlp);
    ops.push_back(elementwise("mlp.act_mul", I, 2, 5, p, phase, layers));
    append_linear(ops, "mlp.down_proj", I, H, rows, p, phase, layers, WeightClass::dense_mlp);
  } else {
    const double E = m.num_experts;
    const double k = m.experts_per_token;
    const double Ie = ceil_div(m.expert_intermediate_size, tp);
    const double eb = p.weights[WeightClass::routed_experts];
    append_linear(ops, "moe.router", H, E, rows, p, phase, layers, WeightClass::router);
    if (p.fusion.moe_routing_kernels > 0) {
      // The top-k over the router's logits (DeepSeek-V3: sigmoid, bias, group-limited top-k,
      // normalisation), as the engine's routing kernels run it: the logits read, the ids and weights written.
      Operator topk = elementwise("moe.topk", E, 0, 4, p, phase, layers);
      topk.bytes = rows * E * 4.0 + rows * k * 8.0;
      topk.kernels = p.fusion.moe_routing_kernels;
      ops.push_back(topk);
    }
    if (full.dp > 1 || full.ep > 1) {
      append_parallel_experts(ops, m, layers, full, p, phase);
    } else {
      const double touched = expected_experts_touched(E, k, p.batch, p.tokens, m.expert_locality, m.expert_load_cv);
      Operator ex;
      ex.name = "moe.experts";
      ex.phase = phase;
      ex.count = layers;
      ex.flops = 2.0 * rows * k * 3.0 * H * Ie;
      ex.gemm_rows = rows * k / touched;  // tokens per touched expert, on average
      // One grouped product over the touched experts' gate/up matrices (the larger two thirds).
      ex.gemm_cols = touched * 2.0 * Ie;
      ex.gemm_depth = H;
      ex.weight_class = WeightClass::routed_experts;
      ex.weight_bytes = touched * 3.0 * H * Ie * eb;
      ex.bytes = ex.weight_bytes + rows * k * (2.0 * H + 3.0 * Ie) * p.act_bytes;
      set_expert_kernels(ex, p);
      ops.push_back(ex);
    }
    if (m.shared_expert_intermediate_size > 0) {
      const double Is = ceil_div(m.shared_expert_intermediate_size, tp);
      append_linear(ops, "moe.shared_gate_up", H, 2 * Is, rows, p, phase, layers, WeightClass::shared_experts);
      // SiLU(gate) · up between the two products, a kernel of its own as the dense MLP's act_mul.
      ops.push_back(elementwise("moe.shared_act_mul", Is, 2, 5, p, phase, layers));
      append_linear(ops, "moe.shared_down", Is, H, rows, p, phase, layers, WeightClass::shared_experts);
    }
  }
  if (p.tp > 1) ops.push_back(collective("all_reduce.mlp", rows * H * p.act_bytes, 2.0, p, phase, layers));
  // The residual add runs inside the next RMSNorm where the engine fuses them (fused_add_rms_norm).
  if (!p.fusion.add_norm && !ar_norm) ops.push_back(elementwise("residual_add", H, 2, 1, p, phase, layers));
}

void append_lm_head(std::vector<Operator>& ops, int hidden, int vocab, const ForwardParams& p,
                    const char* phase, double count) {
  const double rows = p.batch * p.logit_rows;
  ForwardParams q = p;
  q.tokens = p.logit_rows;
  ops.push_back(elementwise("final_norm", hidden, 1, 4, q, phase, count));
  const double v = std::ceil(double(vocab) / p.tp);  // vocab-parallel
  append_linear(ops, "lm_head", hidden, v, rows, p, phase, count, WeightClass::lm_head);
  if (p.tp > 1) ops.push_back(collective("all_gather.logits", rows * vocab * 4.0, 1.0, p, phase, count));
  // Sampling reads the fp32 logits a few times (softmax, top-k/p, draw).
  Operator s;
  s.name = "sampling";
  s.phase = phase;
  s.count = count;
  s.flops = 5.0 * rows * vocab;
  s.bytes = 3.0 * rows * vocab * 4.0;
  ops.push_back(s);
}

void append_elementwise(std::vector<Operator>& ops, const char* name, double width, double reads,
                        double flops_per_elem, const ForwardParams& p, const char* phase, double count) {
  ops.push_back(elementwise(name, width, reads, flops_per_elem, p, phase, count));
}

std::vector<Operator> mtp_module_forward(const ModelShape& layer, const ForwardParams& full, const char* phase) {
  const ForwardParams p = attention_group_params(full);  // all but the layer's routed experts
  std::vector<Operator> ops;
  ops.reserve(28);
  const double H = layer.hidden_size;
  append_embedding(ops, layer.hidden_size, p, phase);
  ops.push_back(elementwise("mtp.enorm", H, 1, 4, p, phase, 1));  // RMSNorm of the token's embedding
  ops.push_back(elementwise("mtp.hnorm", H, 1, 4, p, phase, 1));  // RMSNorm of the previous hidden state
  append_linear(ops, "mtp.eh_proj", 2 * H, H, p.batch * p.tokens, p, phase);
  append_decoder_layers(ops, layer, 1, layer.hidden_size, full, phase);
  append_lm_head(ops, layer.hidden_size, layer.vocab_size, p, phase);  // shared_head.norm + the target's head
  return ops;
}

std::vector<Operator> medusa_heads_forward(int hidden, int vocab, int heads, int blocks, const ForwardParams& full,
                                           const char* phase) {
  const ForwardParams p = attention_group_params(full);  // the heads run per attention group
  std::vector<Operator> ops;
  ops.reserve(6);
  const double H = hidden;
  const double rows = p.batch * p.tokens;
  if (blocks > 0) {
    append_linear(ops, "medusa.resblock", H, H, rows, p, phase, double(heads) * blocks);
    ops.back().weight_bytes += H * p.weights[WeightClass::other];  // the bias
    ops.back().bytes += H * p.weights[WeightClass::other];
    ops.push_back(elementwise("medusa.silu_residual", H, 2, 5, p, phase, double(heads) * blocks));
  }
  const double v = std::ceil(double(vocab) / p.tp);  // vocab-parallel
  append_linear(ops, "medusa.lm_head", H, v, rows, p, phase, heads);
  if (p.tp > 1) ops.push_back(collective("all_gather.logits", rows * vocab * 4.0, 1.0, p, phase, heads));
  // The candidates: each head's top-k over its fp32 logits (read a few times, as sampling).
  Operator s;
  s.name = "medusa.topk";
  s.phase = phase;
  s.count = heads;
  s.flops = 5.0 * rows * vocab;
  s.bytes = 3.0 * rows * vocab * 4.0;
  ops.push_back(s);
  return ops;
}

std::vector<Operator> model_forward_ops(const ModelShape& m, const ForwardParams& p, const char* phase) {
  std::vector<Operator> ops;
  ops.reserve(24);  // a forward has ~20 operators: one allocation instead of several
  const ForwardParams group = attention_group_params(p);  // the embedding and LM head run per attention group
  append_embedding(ops, m.hidden_size, group, phase);
  if (m.is_moe() && m.dense_layers > 0) {
    append_decoder_layers(ops, m.dense_layer_shape(), m.dense_layers, m.hidden_size, p, phase);
    append_decoder_layers(ops, m, m.moe_layers(), m.hidden_size, p, phase);
  } else {
    append_decoder_layers(ops, m, m.num_layers, m.hidden_size, p, phase);
  }
  append_lm_head(ops, m.hidden_size, m.vocab_size, group, phase);
  return ops;
}

void scale_counts(std::vector<Operator>& ops, double factor) {
  for (auto& op : ops) op.count *= factor;
}

}  // namespace specdec::sim
