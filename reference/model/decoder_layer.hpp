#pragma once
// One Llama decoder layer of the reference, split so that drafters can reuse it: the attention
// input may differ from the residual stream (EAGLE-1 omits the input norm; EAGLE-3 feeds
// concat(norm(emb), norm(h)) of width 2H while the residual stays h).
#include <vector>

#include "reference/core/tensor.hpp"
#include "reference/model/attention_mask.hpp"
#include "reference/model/kv_cache.hpp"
#include "reference/model/language_model.hpp"
#include "reference/model/model_config.hpp"
#include "reference/model/rope.hpp"
#include "reference/model/weights.hpp"

namespace specdec {

// Where the T new tokens of a forward call live: their positions, RoPE angles, cache slots and mask.
struct TokenBlock {
  std::vector<int32_t> positions;    // (T)
  std::vector<Rope::Angles> angles;  // (T)
  int first_slot = 0;                // the new tokens occupy cache slots [first_slot, first_slot + T)
  const AttentionMask* mask = nullptr;  // (T, first_slot + T)
};

// The checks every backend makes of a request before computing anything: at least one token, every
// token id in the vocabulary, logit rows among the tokens, hidden-state indices in [0, L]. Throws
// specdec::Error saying which and why.
void check_forward_request(const ModelConfig& c, const ForwardRequest& request);

// Builds the block for a request on a cache that holds `first_slot` entries; validates positions
// and the mask's dimensions. A causal mask is built into `mask_storage` when the request has none.
TokenBlock make_token_block(const ForwardRequest& request, const Rope& rope, int first_slot,
                            std::optional<AttentionMask>& mask_storage);

// Self-attention including o_proj. attn_in: (T, Hin); writes the new keys/values into `cache` at
// the block's slots for `layer`; returns (T, H).
Matrix self_attention(const LayerWeights& w, const ModelConfig& c, const Rope& rope, const Matrix& attn_in,
                      DenseKVCache& cache, int layer, const TokenBlock& block);

// SwiGLU MLP: down(silu(gate(x)) ⊙ up(x)). x: (T, H) -> (T, H).
Matrix mlp(const LayerWeights& w, const Matrix& x);

// What a layer's residual stream was between its blocks (ForwardRequest::layer_states).
struct LayerSubsteps {
  Matrix attention;            // (T, H) residual + attention(attn_in)
  Matrix post_attention_norm;  // (T, H) its RMSNorm, the MLP's input
};

// residual + attention(attn_in), then + mlp(post_attention_norm(·)). residual: (T, H). With
// `substeps`, the two intermediate states are kept there.
Matrix decoder_layer(const LayerWeights& w, const ModelConfig& c, const Rope& rope, const Matrix& residual,
                     const Matrix& attn_in, DenseKVCache& cache, int layer, const TokenBlock& block,
                     LayerSubsteps* substeps = nullptr);

}  // namespace specdec
