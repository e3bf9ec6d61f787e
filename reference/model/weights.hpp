#pragma once
// Weights of a Llama-family decoder, in fp32 whatever the stored dtype. Linear weights keep the
// checkpoint's [out, in] layout: y = x · Wᵀ, one contiguous row per output feature.
#include <array>
#include <vector>

#include "reference/core/tensor.hpp"

namespace specdec {

struct LayerWeights {
  Vector input_layernorm;           // [H]; empty for EAGLE-1's first layer (no input norm)
  Matrix q_proj, k_proj, v_proj;    // [nh·hd, Hin], [nkv·hd, Hin], [nkv·hd, Hin]
  Vector q_bias, k_bias, v_bias;    // empty unless attention biases
  Matrix o_proj;                    // [H, nh·hd]
  Vector o_bias;                    // empty unless o_proj bias
  Vector q_norm, k_norm;            // [hd]; empty unless Qwen3 q/k norm
  Vector post_attention_layernorm;  // [H]
  Matrix gate_proj, up_proj;        // [I, H]
  Matrix down_proj;                 // [H, I]
  Vector gate_bias, up_bias, down_bias;  // empty unless mlp_bias
};

// Every matrix and every vector of a layer, for code that treats them alike (rounding, counting
// bytes). A vector a layer does not have is empty.
inline std::array<Matrix*, 7> layer_matrices(LayerWeights& l) {
  return {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj};
}
inline std::array<const Matrix*, 7> layer_matrices(const LayerWeights& l) {
  return {&l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.gate_proj, &l.up_proj, &l.down_proj};
}
inline std::array<Vector*, 11> layer_vectors(LayerWeights& l) {
  return {&l.input_layernorm, &l.q_bias,  &l.k_bias,  &l.v_bias,    &l.o_bias,   &l.q_norm,
          &l.k_norm,          &l.post_attention_layernorm, &l.gate_bias, &l.up_bias, &l.down_bias};
}
inline std::array<const Vector*, 11> layer_vectors(const LayerWeights& l) {
  return {&l.input_layernorm, &l.q_bias,  &l.k_bias,  &l.v_bias,    &l.o_bias,   &l.q_norm,
          &l.k_norm,          &l.post_attention_layernorm, &l.gate_bias, &l.up_bias, &l.down_bias};
}

struct LlamaWeights {
  Matrix embed_tokens;               // [V, H]
  std::vector<LayerWeights> layers;  // L
  Vector norm;                       // [H]
  Matrix lm_head;                    // [V, H]; empty when tie_word_embeddings

  const Matrix& output_head() const { return lm_head.size() ? lm_head : embed_tokens; }
};

}  // namespace specdec
