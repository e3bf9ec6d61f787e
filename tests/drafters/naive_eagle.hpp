#pragma once
// An independent, deliberately naive long-double forward of EAGLE-1 / EAGLE-3 / P-EAGLE heads and MTP modules:
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
  const int T = static_cast<int>(tokens.size()), H = lc.hidden_size;
  const bool eagle1 = c.kind == EagleKind::eagle1;
  const bool mtp = c.kind == EagleKind::mtp;
  std::vector<LVec> residual(T), attn_in(T);
  for (int t = 0; t < T; ++t) {
    LVec e(H);
    for (int i = 0; i < H; ++i) e[i] = embed(tokens[t], i);
    if (mtp) {
      // MTP: fc over the two normed inputs, embedding first (MiMo: hidden first), no bias.
      const LVec en = naive_rms(e, nullptr, &w.embed_norm, lc.rms_norm_eps);
      const LVec hn = naive_rms(features[t], nullptr, &w.hidden_norm, lc.rms_norm_eps);
      LVec cat = c.hidden_first ? hn : en;
      const LVec& second = c.hidden_first ? en : hn;
      cat.insert(cat.end(), second.begin(), second.end());
      residual[t] = naive_linear(cat, w.fc, Vector());
      continue;
    }
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
    if (li > 0 || mtp) {  // MTP's layers are all standard
      for (int t = 0; t < T; ++t) attn_in[t] = naive_rms(x[t], nullptr, &l.input_layernorm, lc.rms_norm_eps);
    }
    naive_layer(x, attn_in, l, lc);
  }
  NaiveEagleOutput out;
  out.hidden = x;
  for (int t = 0; t < T; ++t) {
    out.logits.push_back(naive_linear(eagle1 ? x[t] : naive_rms(x[t], nullptr, &w.norm, lc.rms_norm_eps), head, Vector()));
  }
  return out;
}

}  // namespace specdec::testing
