#include "reference/model/decoder_layer.hpp"

#include <cmath>
#include <string>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/model/attention.hpp"
#include "reference/model/ops.hpp"

namespace specdec {

void check_forward_request(const ModelConfig& c, const ForwardRequest& request) {
  const int T = static_cast<int>(request.tokens.size());
  const int L = c.num_hidden_layers;
  if (T == 0) throw Error("forward: no tokens given");
  for (int r : request.logit_rows) {
    if (r < 0 || r >= T) throw Error("forward: logit row " + std::to_string(r) + " outside [0, " + std::to_string(T) + ")");
  }
  for (int a : request.aux_layers) {
    if (a < 0 || a > L) {
      throw Error("forward: hidden-state index " + std::to_string(a) + " outside [0, " + std::to_string(L) +
                  "] (0 = embeddings, " + std::to_string(L) + " = after the final norm)");
    }
  }
  for (int32_t tok : request.tokens) {
    if (tok < 0 || tok >= c.vocab_size) {
      throw Error("forward: token id " + std::to_string(tok) + " outside the vocabulary [0, " +
                  std::to_string(c.vocab_size) + ")");
    }
  }
}

Matrix self_attention(const LayerWeights& w, const ModelConfig& c, const Rope& rope, const Matrix& attn_in,
                      DenseKVCache& cache, int layer, const TokenBlock& block) {
  const int T = static_cast<int>(attn_in.rows());
  const int nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int group = nh / nkv;

  Matrix q = ops::linear(attn_in, w.q_proj, w.q_bias);  // (T, nh·hd)
  Matrix k = ops::linear(attn_in, w.k_proj, w.k_bias);  // (T, nkv·hd)
  Matrix v = ops::linear(attn_in, w.v_proj, w.v_bias);  // (T, nkv·hd)
  for (int t = 0; t < T; ++t) {
    if (w.q_norm.size()) {  // Qwen3: RMSNorm over each head before RoPE
      for (int h = 0; h < nh; ++h) ops::rms_norm_inplace(q.row(t).data() + h * hd, w.q_norm.data(), hd, c.rms_norm_eps);
      for (int h = 0; h < nkv; ++h) ops::rms_norm_inplace(k.row(t).data() + h * hd, w.k_norm.data(), hd, c.rms_norm_eps);
    }
    rope.apply(q.row(t).data(), nh, block.angles[t]);
    rope.apply(k.row(t).data(), nkv, block.angles[t]);
  }
  Matrix& K = cache.keys(layer);    // (capacity, nkv·hd)
  Matrix& V = cache.values(layer);  // (capacity, nkv·hd)
  K.middleRows(block.first_slot, T) = k;
  V.middleRows(block.first_slot, T) = v;

  const int cols = block.first_slot + T;
  const int window = c.layer_sliding_window(layer);  // 0 = full attention
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  Matrix out = Matrix::Zero(T, nh * hd);  // (T, nh·hd)
  [[maybe_unused]] const bool parallel = static_cast<long long>(T) * nh * cols * hd >= ops::parallel_work_threshold();
#pragma omp parallel for collapse(2) schedule(static) if (parallel)
  for (int t = 0; t < T; ++t) {
    for (int h = 0; h < nh; ++h) {
      const float* qh = q.row(t).data() + h * hd;
      const int g = h / group;  // grouped-query attention: heads share KV head g
      const int q_pos = block.positions[t];
      // Keys in slot order; the order of the reductions in attend depends only on which keys are
      // visible, never on T, so one token alone gives the same result.
      std::vector<const float*> keys, values;
      for (int j = 0; j < cols; ++j) {
        if (!block.mask->allowed(t, j)) continue;
        if (window > 0 && q_pos - cache.position(j) >= window) continue;
        keys.push_back(K.row(j).data() + g * hd);
        values.push_back(V.row(j).data() + g * hd);
      }
      attend(qh, keys.data(), values.data(), static_cast<int>(keys.size()), hd, scale, out.row(t).data() + h * hd);
    }
  }
  return ops::linear(out, w.o_proj, w.o_bias);
}

Matrix mlp(const LayerWeights& w, const Matrix& x) {
  return ops::linear(ops::swiglu(ops::linear(x, w.gate_proj, w.gate_bias), ops::linear(x, w.up_proj, w.up_bias)),
                     w.down_proj, w.down_bias);
}

Matrix decoder_layer(const LayerWeights& w, const ModelConfig& c, const Rope& rope, const Matrix& residual,
                     const Matrix& attn_in, DenseKVCache& cache, int layer, const TokenBlock& block, LayerSubsteps* substeps) {
  Matrix h = residual + self_attention(w, c, rope, attn_in, cache, layer, block);
  Matrix mlp_in = ops::rms_norm(h, w.post_attention_layernorm, c.rms_norm_eps);
  Matrix out = h + mlp(w, mlp_in);
  if (substeps) {
    substeps->attention = std::move(h);
    substeps->post_attention_norm = std::move(mlp_in);
  }
  return out;
}

}  // namespace specdec
