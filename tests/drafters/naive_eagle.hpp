#pragma once
// An independent, deliberately naive long-double forward of EAGLE-1 / EAGLE-3 / P-EAGLE heads:
// one causal pass over all rows at positions 0..T−1, no cache, written from REFERENCES.md with the
// helpers of tests/reference/naive_forward.hpp. It shares no code with reference/drafters.
#include <cmath>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "tests/reference/naive_forward.hpp"

namespace specdec::testing {

struct NaiveEagleOutput {
  std::vector<LVec> hidden;  // (T, H) last layer output, pre-norm
  std::vector<LVec> logits;  // (T, Vout)
};

// features[t]: the row's input (fc input features, or an H-wide hidden state when projected[t]).
// embed: the embedding table in use; head: EAGLE-1 the target's LM head, else the head's lm_head.
inline NaiveEagleOutput naive_eagle_forward(const EagleHeadConfig& c, const EagleWeights& w, const Matrix& embed,
                                            const Matrix& head, const std::vector<int32_t>& tokens,
                                            const std::vector<LVec>& features, const std::vector<bool>& projected) {
  const ModelConfig& lc = c.layer;
  const int T = static_cast<int>(tokens.size()), H = lc.hidden_size, hd = lc.head_dim;
  const int nh = lc.num_attention_heads, nkv = lc.num_key_value_heads;
  const bool eagle1 = c.kind == EagleKind::eagle1;
  std::vector<LVec> residual(T), attn_in(T);
  for (int t = 0; t < T; ++t) {
    LVec e(H);
    for (int i = 0; i < H; ++i) e[i] = embed(tokens[t], i);
    if (eagle1) {
      LVec cat = e;  // embedding first, then the feature
      cat.insert(cat.end(), features[t].begin(), features[t].end());
      residual[t] = naive_linear(cat, w.fc, w.fc_bias);
      attn_in[t] = residual[t];  // no input norm
      continue;
    }
    LVec h = projected[t] ? LVec(features[t].begin(), features[t].begin() + H) : naive_linear(features[t], w.fc, w.fc_bias);
    const LVec hn = naive_rms(h, nullptr, &w.hidden_norm, lc.rms_norm_eps);
    attn_in[t] = naive_rms(e, nullptr, &w.layers[0].input_layernorm, lc.rms_norm_eps);
    attn_in[t].insert(attn_in[t].end(), hn.begin(), hn.end());
    residual[t] = c.norm_before_residual ? hn : h;
  }
  std::vector<LVec>& x = residual;
  for (std::size_t li = 0; li < w.layers.size(); ++li) {
    const LayerWeights& l = w.layers[li];
    if (li > 0) {
      for (int t = 0; t < T; ++t) attn_in[t] = naive_rms(x[t], nullptr, &l.input_layernorm, lc.rms_norm_eps);
    }
    std::vector<LVec> q(T), k(T), v(T);
    for (int t = 0; t < T; ++t) {
      q[t] = naive_linear(attn_in[t], l.q_proj, l.q_bias);
      k[t] = naive_linear(attn_in[t], l.k_proj, l.k_bias);
      v[t] = naive_linear(attn_in[t], l.v_proj, l.v_bias);
      const LVec f = expected_inv_freq(lc, t);
      for (int h = 0; h < nh; ++h) {
        if (l.q_norm.size()) q[t] = naive_rms(q[t], nullptr, &l.q_norm, lc.rms_norm_eps, h * hd, hd);
        expected_rope(q[t].data() + h * hd, hd, f, t);
      }
      for (int h = 0; h < nkv; ++h) {
        if (l.k_norm.size()) k[t] = naive_rms(k[t], nullptr, &l.k_norm, lc.rms_norm_eps, h * hd, hd);
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
      const LVec m = naive_rms(x[t], nullptr, &l.post_attention_layernorm, lc.rms_norm_eps);
      LVec g = naive_linear(m, l.gate_proj, l.gate_bias);
      const LVec u = naive_linear(m, l.up_proj, l.up_bias);
      for (std::size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
      const LVec d = naive_linear(g, l.down_proj, l.down_bias);
      for (int i = 0; i < H; ++i) x[t][i] += d[i];
    }
  }
  NaiveEagleOutput out;
  out.hidden = x;
  for (int t = 0; t < T; ++t) {
    out.logits.push_back(naive_linear(eagle1 ? x[t] : naive_rms(x[t], nullptr, &w.norm, lc.rms_norm_eps), head, Vector()));
  }
  return out;
}

}  // namespace specdec::testing
