#include "simulator/mla.hpp"

#include <cmath>

namespace specdec::sim {

namespace {

// One small product per head, as the engines' batched matmuls run W_UK and W_UV:
// x: (heads, rows, depth) · W: (heads, depth, cols) -> (heads, rows, cols). Their weights are the
// 16-bit copies vLLM keeps (it has no quantised batched product for them), so they are read at the
// activation width whatever the checkpoint's.
Operator per_head_product(const char* name, double rows, double heads, double depth, double cols,
                          const ForwardParams& p, const char* phase, double count) {
  Operator op;
  op.name = name;
  op.phase = phase;
  op.count = count;
  op.flops = 2.0 * rows * heads * depth * cols;
  op.gemm_rows = rows;
  op.gemm_cols = heads * cols;  // every head's output columns
  op.gemm_depth = depth;
  op.weight_bytes = heads * depth * cols * p.act_bytes;
  op.bytes = op.weight_bytes + rows * heads * (depth + cols) * p.act_bytes;
  return op;
}

}  // namespace

double mla_attention_params(const ModelShape& m) {
  const double H = m.hidden_size, nh = m.num_heads;
  const double Q = m.q_lora_rank, Dl = m.kv_lora_rank, Dn = m.qk_nope_head_dim, Dr = m.qk_rope_head_dim,
               Dv = m.v_head_dim;
  const double query = Q > 0 ? H * Q + Q + Q * nh * (Dn + Dr)  // q_a_proj, q_a_layernorm, q_b_proj
                             : H * nh * (Dn + Dr);             // q_proj
  const double kv = H * (Dl + Dr) + Dl + mla_up_projection_params(m);  // kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj
  return query + kv + nh * Dv * H;                                     // + o_proj
}

double mla_up_projection_params(const ModelShape& m) {
  return double(m.kv_lora_rank) * m.num_heads * (double(m.qk_nope_head_dim) + m.v_head_dim);
}

void append_mla_attention(std::vector<Operator>& ops, const ModelShape& m, double layers, double in,
                          const ForwardParams& p, const char* phase) {
  const double nh = std::ceil(double(m.num_heads) / p.tp);  // heads per device
  const double Q = m.q_lora_rank, Dl = m.kv_lora_rank, Dn = m.qk_nope_head_dim, Dr = m.qk_rope_head_dim,
               Dv = m.v_head_dim;
  const double rows = p.batch * p.tokens;
  const double a = p.act_bytes;
  const double kv = kv_element_bytes(p);

  // Down-projections, replicated on every device: x: (rows, in) -> q_c: (rows, Q),
  // kv_c: (rows, Dl), k_pe: (rows, Dr); then the query's heads, split across devices.
  // The RMSNorms over q_c and kv_c: one grouped kernel where the engine fuses them.
  const bool grouped_norms = Q > 0 && p.fusion.grouped_mla_norms;
  if (Q > 0) {
    append_linear(ops, "mla.qkv_a_proj", in, Q + Dl + Dr, rows, p, phase, layers, WeightClass::attention);  // q_a_proj + kv_a_proj_with_mqa
    if (grouped_norms) append_elementwise(ops, "mla.qkv_a_norms", Q + Dl, 1, 4, p, phase, layers);
    else append_elementwise(ops, "mla.q_a_norm", Q, 1, 4, p, phase, layers);
    append_linear(ops, "mla.q_b_proj", Q, nh * (Dn + Dr), rows, p, phase, layers, WeightClass::attention);  // q: (rows, nh, Dn + Dr)
  } else {
    append_linear(ops, "mla.kv_a_proj", in, Dl + Dr, rows, p, phase, layers, WeightClass::attention);
    append_linear(ops, "mla.q_proj", in, nh * (Dn + Dr), rows, p, phase, layers, WeightClass::attention);  // q: (rows, nh, Dn + Dr)
  }
  if (!grouped_norms) append_elementwise(ops, "mla.kv_a_norm", Dl, 1, 4, p, phase, layers);
  append_elementwise(ops, "mla.rope", (nh + 1) * Dr, 1, 6, p, phase, layers);  // q_pe: (rows, nh, Dr), k_pe: (rows, Dr)
  if (p.fusion.mla_cache_write_kernel) {
    // The new tokens' [kv_c; k_pe] written into the latent cache by a kernel of its own.
    Operator w;
    w.name = "mla.cache_write";
    w.phase = phase;
    w.count = layers;
    w.bytes = rows * (Dl + Dr) * (a + kv);
    ops.push_back(w);
  }

  // Each new token attends to the cached context and, causally, to the new tokens before it
  // ((T + 1) / 2 of them on average), as grouped-query attention does.
  const double keys = p.context + (p.tokens + 1.0) / 2.0;
  const double cached = p.context + p.tokens;
  if (!p.prefill) {
    // Absorbed: q_nope: (nh, rows, Dn) · W_UK: (nh, Dn, Dl) -> ql_nope: (nh, rows, Dl).
    ops.push_back(per_head_product("mla.w_uk", rows, nh, Dn, Dl, p, phase, layers));
    // Attention over the latent cache, one shared key [kv_c; k_pe]: (Dl + Dr) and value kv_c: (Dl)
    // per token for every head: scores over Dl + Dr, outputs o_c: (rows, nh, Dl).
    Operator at;
    at.name = "mla.attention";
    at.phase = phase;
    at.count = layers;
    at.flops = 2.0 * rows * keys * nh * ((Dl + Dr) + Dl);       // QKᵀ and PV
    at.kv_bytes = p.batch * cached * (Dl + Dr) * kv;            // the latent, read once per sequence for all heads
    at.bytes = at.kv_bytes + rows * nh * ((Dl + Dr) + Dl) * a;  // queries in, latent outputs out
    at.kernels = p.fusion.mla_attention_kernels;                 // split-KV attention and the combine
    ops.push_back(at);
    // o_c: (nh, rows, Dl) · W_UV: (nh, Dl, Dv) -> o: (nh, rows, Dv).
    ops.push_back(per_head_product("mla.w_uv", rows, nh, Dl, Dv, p, phase, layers));
  } else {
    // Unabsorbed: every key's latent, the cached context's too (vLLM up-projects it chunk by
    // chunk; a prompt has none), kv_c: (B·(C + T), Dl) -> [k_nope | v]: (B·(C + T), nh, Dn + Dv).
    append_linear(ops, "mla.kv_b_proj", Dl, nh * (Dn + Dv), p.batch * cached, p, phase, layers, WeightClass::attention);
    ops.back().kv_bytes = p.batch * p.context * Dl * kv;  // the cached part of its input
    // Multi-head attention: q: (rows, nh, Dn + Dr) against k = [k_nope; k_pe]: (nh, Dn + Dr) and
    // v: (nh, Dv) per key.
    Operator at;
    at.name = "mla.attention.mha";
    at.phase = phase;
    at.count = layers;
    at.flops = 2.0 * rows * keys * nh * ((Dn + Dr) + Dv);  // QKᵀ and PV
    at.kv_bytes = p.batch * p.context * Dr * kv;           // the cached k_pe
    at.bytes = at.kv_bytes + p.batch * cached * nh * (Dn + Dr + Dv) * a  // the up-projected keys and values
               + rows * nh * (Dn + Dr + Dv) * a;                         // queries in, outputs out
    ops.push_back(at);
  }
}

}  // namespace specdec::sim
