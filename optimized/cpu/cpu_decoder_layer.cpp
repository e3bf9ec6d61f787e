#include "optimized/cpu/cpu_decoder_layer.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "optimized/cpu/cpu_attention.hpp"
#include "optimized/cpu/fused_linear.hpp"
#include "reference/model/ops.hpp"

namespace specdec::cpu {

namespace {

// Concatenated biases of the fused q/k/v projection; empty when the model has none.
std::vector<float> qkv_bias(const LayerWeights& w) {
  if (!w.q_bias.size()) return {};
  std::vector<float> b = to_vector(w.q_bias);
  b.insert(b.end(), w.k_bias.data(), w.k_bias.data() + w.k_bias.size());
  b.insert(b.end(), w.v_bias.data(), w.v_bias.data() + w.v_bias.size());
  return b;
}

void grow(std::vector<float>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

std::size_t PackedLayer::bytes() const {
  std::size_t b = qkv.bytes() + o.bytes() + gate_up.bytes() + down.bytes();
  for (const auto* v : {&input_norm, &post_norm, &qkv_bias, &q_norm, &k_norm, &o_bias, &gate_bias, &up_bias, &down_bias})
    b += sizeof(float) * v->size();
  return b;
}

PackedLayer pack_layer(const LayerShape& d, const LayerRows& rows, const LayerWeights& w, Dtype precision,
                       const std::string& prefix) {
  using M = LayerMatrix;
  auto of = [&rows](M which) {
    return [&rows, which](int64_t first, int64_t n, float* out) { rows(which, first, n, out); };
  };
  PackedLayer pl;
  pl.input_norm = to_vector(w.input_layernorm);
  pl.post_norm = to_vector(w.post_attention_layernorm);
  // q, k and v stacked: packed rows [0, q) are q_proj's, then k_proj's, then v_proj's.
  pl.qkv = PackedMatrix(d.q + 2 * d.kv, d.in, precision, prefix + "self_attn.{q,k,v}_proj.weight",
                        [&](int64_t first, int64_t n, float* out) {
                          const int64_t ends[3] = {d.q, d.q + d.kv, d.q + 2 * d.kv};
                          const M part[3] = {M::q_proj, M::k_proj, M::v_proj};
                          for (int p = 0, start = 0; p < 3; start = static_cast<int>(ends[p]), ++p) {
                            const int64_t lo = std::max<int64_t>(first, start), hi = std::min(first + n, ends[p]);
                            if (lo < hi) rows(part[p], lo - start, hi - lo, out + (lo - first) * d.in);
                          }
                        });
  pl.qkv_bias = qkv_bias(w);
  pl.q_norm = to_vector(w.q_norm);
  pl.k_norm = to_vector(w.k_norm);
  pl.o = PackedMatrix(d.hidden, d.q, precision, prefix + "self_attn.o_proj.weight", of(M::o_proj));
  pl.o_bias = to_vector(w.o_bias);
  pl.gate_up = pack_gate_up(d.intermediate, d.hidden, of(M::gate_proj), of(M::up_proj), precision,
                            prefix + "mlp.{gate,up}_proj.weight");
  pl.gate_bias = to_vector(w.gate_bias);
  pl.up_bias = to_vector(w.up_bias);
  pl.down = PackedMatrix(d.hidden, d.intermediate, precision, prefix + "mlp.down_proj.weight", of(M::down_proj));
  pl.down_bias = to_vector(w.down_bias);
  return pl;
}

PackedLayer pack_layer(const LayerWeights& w, Dtype precision, const std::string& prefix) {
  LayerShape d;
  d.q = static_cast<int>(w.q_proj.rows());
  d.kv = static_cast<int>(w.k_proj.rows());
  d.in = static_cast<int>(w.q_proj.cols());
  d.hidden = static_cast<int>(w.o_proj.rows());
  d.intermediate = static_cast<int>(w.gate_proj.rows());
  const std::array<const Matrix*, 7> m = layer_matrices(w);  // in LayerMatrix's order
  return pack_layer(
      d,
      [&m](LayerMatrix which, int64_t first, int64_t n, float* out) {
        const Matrix& x = *m[static_cast<std::size_t>(which)];
        std::copy(x.data() + first * x.cols(), x.data() + (first + n) * x.cols(), out);
      },
      w, precision, prefix);
}

void rms_norm_rows(const float* x, float* y, int rows, int n, const std::vector<float>& w, double eps) {
  for (int t = 0; t < rows; ++t) {
    float* yt = y + static_cast<std::size_t>(t) * n;
    std::memcpy(yt, x + static_cast<std::size_t>(t) * n, sizeof(float) * n);
    ops::rms_norm_inplace(yt, w.data(), n, eps);
  }
}

void decoder_layer(const PackedLayer& w, const ModelConfig& c, const Rope& rope, const float* attn_in, int layer,
                   const std::vector<LayerSequence>& seqs, float* x, LayerScratch& s) {
  int T = 0, n = 0;  // new tokens, residual rows: over every sequence
  for (const LayerSequence& q : seqs) {
    T += static_cast<int>(q.block->positions.size());
    n += static_cast<int>(q.rows.size());
  }
  const int H = c.hidden_size, I = c.intermediate_size;
  const int nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int qd = c.q_dim(), kvd = c.kv_dim(), qkvd = qd + 2 * kvd;
  grow(s.qkv, static_cast<std::size_t>(T) * qkvd);  // (T, q | k | v)
  grow(s.attn, static_cast<std::size_t>(n) * qd);   // (n, nh·hd)
  grow(s.xn, static_cast<std::size_t>(n) * H);      // (n, H)
  grow(s.act, static_cast<std::size_t>(n) * I);     // (n, I)

  linear(w.qkv, or_null(w.qkv_bias), attn_in, w.qkv.cols(), T, s.qkv.data(), qkvd, false);
  std::vector<AttentionSequence> attend;  // each sequence's queries and output rows
  attend.reserve(seqs.size());
  std::size_t first_token = 0, first_row = 0;
  for (const LayerSequence& seq : seqs) {
    const TokenBlock& block = *seq.block;
    const int Ti = static_cast<int>(block.positions.size());
    float* qkv = &s.qkv[first_token * qkvd];  // (Ti, q | k | v) this sequence's tokens
    for (int t = 0; t < Ti; ++t) {
      float* q = qkv + static_cast<std::size_t>(t) * qkvd;
      float* k = q + qd;
      const float* v = k + kvd;
      if (!w.q_norm.empty()) {  // Qwen3: RMSNorm over each head before RoPE
        for (int h = 0; h < nh; ++h) ops::rms_norm_inplace(q + h * hd, w.q_norm.data(), hd, c.rms_norm_eps);
        for (int h = 0; h < nkv; ++h) ops::rms_norm_inplace(k + h * hd, w.k_norm.data(), hd, c.rms_norm_eps);
      }
      rope.apply(q, nh, block.angles[static_cast<std::size_t>(t)]);
      rope.apply(k, nkv, block.angles[static_cast<std::size_t>(t)]);
      std::memcpy(seq.cache->keys(layer, block.first_slot + t), k, sizeof(float) * kvd);
      std::memcpy(seq.cache->values(layer, block.first_slot + t), v, sizeof(float) * kvd);
    }
    if (!seq.rows.empty()) attend.push_back({qkv, seq.cache, &block, &seq.rows, &s.attn[first_row * qd]});
    first_token += static_cast<std::size_t>(Ti);
    first_row += seq.rows.size();
  }
  if (n == 0) return;
  attention(c, layer, c.layer_sliding_window(layer), attend, qkvd, qd);
  linear(w.o, or_null(w.o_bias), s.attn.data(), qd, n, x, H, true);  // x += o_proj(attn)
  rms_norm_rows(x, s.xn.data(), n, H, w.post_norm, c.rms_norm_eps);
  linear_swiglu(w.gate_up, or_null(w.gate_bias), or_null(w.up_bias), s.xn.data(), H, n, s.act.data(), I);
  linear(w.down, or_null(w.down_bias), s.act.data(), I, n, x, H, true);  // x += down(act)
}

}  // namespace specdec::cpu
