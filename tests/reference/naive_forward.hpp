#pragma once
// An independent, deliberately naive long-double Llama forward (full causal recompute, no cache)
// and RoPE frequency formulas written from the Hugging Face definitions. The reference's fp32
// forward is checked against it; nothing here shares code with reference/model.
#include <cmath>
#include <numbers>
#include <vector>

#include "reference/model/model_config.hpp"
#include "reference/model/weights.hpp"

namespace specdec::testing {

using LD = long double;
using LVec = std::vector<LD>;

// HF inv_freq for a token at `position` (dynamic scaling uses sequence length position + 1).
inline LVec expected_inv_freq(const ModelConfig& c, int position) {
  const int hd = c.head_dim;
  const RopeScaling& s = c.rope_scaling;
  const LD orig = s.original_max_position_embeddings > 0 ? s.original_max_position_embeddings : c.max_position_embeddings;
  LD base = c.rope_theta;
  if (s.type == RopeScaling::Type::dynamic && position + 1 > orig) {
    const LD seq = position + 1;
    base = base * std::pow(static_cast<LD>(s.factor) * seq / orig - (static_cast<LD>(s.factor) - 1), static_cast<LD>(hd) / (hd - 2));
  }
  LVec f(hd / 2);
  for (int j = 0; j < hd / 2; ++j) {
    LD inv = 1.0L / std::pow(base, static_cast<LD>(2 * j) / hd);
    if (s.type == RopeScaling::Type::linear) inv /= s.factor;
    if (s.type == RopeScaling::Type::llama3) {
      const LD wavelen = 2 * std::numbers::pi_v<LD> / inv;
      const LD low_wl = orig / s.low_freq_factor, high_wl = orig / s.high_freq_factor;
      if (wavelen > low_wl) {
        inv = inv / s.factor;
      } else if (!(wavelen < high_wl)) {
        const LD sm = (orig / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        inv = (1 - sm) * inv / s.factor + sm * inv;
      }
    }
    f[j] = inv;
  }
  return f;
}

// HF apply_rotary_pos_emb on one head: x·cos + rotate_half(x)·sin.
inline void expected_rope(LD* x, int hd, const LVec& inv_freq, int position) {
  LVec out(hd);
  for (int i = 0; i < hd; ++i) {
    const int j = i % (hd / 2);
    const LD ang = position * inv_freq[j];
    const LD rot = i < hd / 2 ? -x[i + hd / 2] : x[i - hd / 2];
    out[i] = x[i] * std::cos(ang) + rot * std::sin(ang);
  }
  for (int i = 0; i < hd; ++i) x[i] = out[i];
}

inline LVec naive_linear(const LVec& x, const Matrix& w, const Vector& b) {
  LVec y(w.rows(), 0.0L);
  for (int o = 0; o < w.rows(); ++o) {
    LD s = b.size() ? b[o] : 0.0L;
    for (int i = 0; i < w.cols(); ++i) s += static_cast<LD>(w(o, i)) * x[i];
    y[o] = s;
  }
  return y;
}

inline LVec naive_rms(const LVec& x, const LD* w_or_null, const Vector* w, double eps, size_t off = 0, size_t n = 0) {
  if (n == 0) n = x.size();
  LD ss = 0;
  for (size_t i = 0; i < n; ++i) ss += x[off + i] * x[off + i];
  const LD scale = 1.0L / std::sqrt(ss / n + eps);
  LVec y(x);
  for (size_t i = 0; i < n; ++i) y[off + i] = x[off + i] * scale * (w ? static_cast<LD>((*w)[i]) : w_or_null[i]);
  return y;
}

// One decoder layer in long double over T tokens at positions 0..T−1, causal: q/k/v from
// attn_in[t] (Qwen3 q/k norms, RoPE), x[t] += o_proj(attention), then x[t] += MLP of the
// post-attention norm of x[t]. Shared by the target and drafter-head naive forwards.
inline void naive_layer(std::vector<LVec>& x, const std::vector<LVec>& attn_in, const LayerWeights& l,
                        const ModelConfig& c) {
  const int T = static_cast<int>(x.size()), H = c.hidden_size, hd = c.head_dim;
  const int nh = c.num_attention_heads, nkv = c.num_key_value_heads;
  std::vector<LVec> q(T), k(T), v(T);
  for (int t = 0; t < T; ++t) {
    q[t] = naive_linear(attn_in[t], l.q_proj, l.q_bias);
    k[t] = naive_linear(attn_in[t], l.k_proj, l.k_bias);
    v[t] = naive_linear(attn_in[t], l.v_proj, l.v_bias);
    const LVec f = expected_inv_freq(c, t);
    for (int h = 0; h < nh; ++h) {
      if (l.q_norm.size()) q[t] = naive_rms(q[t], nullptr, &l.q_norm, c.rms_norm_eps, h * hd, hd);
      expected_rope(q[t].data() + h * hd, hd, f, t);
    }
    for (int h = 0; h < nkv; ++h) {
      if (l.k_norm.size()) k[t] = naive_rms(k[t], nullptr, &l.k_norm, c.rms_norm_eps, h * hd, hd);
      expected_rope(k[t].data() + h * hd, hd, f, t);
    }
  }
  for (int t = 0; t < T; ++t) {
    LVec att(nh * hd, 0.0L);
    for (int h = 0; h < nh; ++h) {
      const int g = h * nkv / nh;
      LVec p(t + 1);
      LD mx = -1e300L, sum = 0;
      for (int j = 0; j <= t; ++j) {
        LD s = 0;
        for (int d = 0; d < hd; ++d) s += q[t][h * hd + d] * k[j][g * hd + d];
        p[j] = s / std::sqrt(static_cast<LD>(hd));
        mx = std::max(mx, p[j]);
      }
      for (int j = 0; j <= t; ++j) sum += (p[j] = std::exp(p[j] - mx));
      for (int j = 0; j <= t; ++j)
        for (int d = 0; d < hd; ++d) att[h * hd + d] += p[j] / sum * v[j][g * hd + d];
    }
    const LVec o = naive_linear(att, l.o_proj, l.o_bias);
    for (int i = 0; i < H; ++i) x[t][i] += o[i];
    const LVec m = naive_rms(x[t], nullptr, &l.post_attention_layernorm, c.rms_norm_eps);
    LVec g = naive_linear(m, l.gate_proj, l.gate_bias);
    const LVec u = naive_linear(m, l.up_proj, l.up_bias);
    for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    const LVec d = naive_linear(g, l.down_proj, l.down_bias);
    for (int i = 0; i < H; ++i) x[t][i] += d[i];
  }
}

// logits (T, V) for every position of `tokens` at positions 0..T−1.
inline std::vector<LVec> naive_forward(const ModelConfig& c, const LlamaWeights& w, const std::vector<int32_t>& tokens) {
  const int T = static_cast<int>(tokens.size()), H = c.hidden_size;
  std::vector<LVec> x(T, LVec(H));
  for (int t = 0; t < T; ++t)
    for (int i = 0; i < H; ++i) x[t][i] = w.embed_tokens(tokens[t], i);
  for (const LayerWeights& l : w.layers) {
    std::vector<LVec> attn_in(T);
    for (int t = 0; t < T; ++t) attn_in[t] = naive_rms(x[t], nullptr, &l.input_layernorm, c.rms_norm_eps);
    naive_layer(x, attn_in, l, c);
  }
  const Matrix& head = c.tie_word_embeddings ? w.embed_tokens : w.lm_head;
  std::vector<LVec> logits(T);
  for (int t = 0; t < T; ++t) logits[t] = naive_linear(naive_rms(x[t], nullptr, &w.norm, c.rms_norm_eps), head, Vector());
  return logits;
}

}  // namespace specdec::testing
