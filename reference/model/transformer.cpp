#include "reference/model/transformer.hpp"

#include <string>

#include "reference/core/error.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/argmax_rows.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/ops.hpp"

namespace specdec {


ForwardRequest ForwardRequest::chain(std::vector<int32_t> tokens) {
  ForwardRequest r;
  r.logit_rows.resize(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) r.logit_rows[i] = static_cast<int>(i);
  r.tokens = std::move(tokens);
  return r;
}

Transformer::Transformer(ModelConfig config, LlamaWeights weights)
    : config_(std::move(config)), weights_(std::move(weights)), rope_(config_) {
  validate_model_config(config_, "model");
  check_checkpoint_weights(config_, weights_, "model");
}

std::unique_ptr<KVCache> Transformer::new_cache(int capacity) const {
  return std::make_unique<DenseKVCache>(config_.num_hidden_layers, config_.kv_dim(), capacity);
}

TokenBlock make_token_block(const ForwardRequest& request, const Rope& rope, int first_slot,
                            std::optional<AttentionMask>& mask_storage) {
  const int T = static_cast<int>(request.tokens.size());
  TokenBlock block;
  block.first_slot = first_slot;
  if (request.positions.empty()) {
    for (int t = 0; t < T; ++t) block.positions.push_back(first_slot + t);
  } else {
    if (static_cast<int>(request.positions.size()) != T) {
      throw Error("forward: " + std::to_string(request.positions.size()) + " positions given for " +
                  std::to_string(T) + " tokens");
    }
    block.positions = request.positions;
  }
  for (int32_t p : block.positions) {
    if (p < 0) throw Error("forward: negative position " + std::to_string(p));
    block.angles.push_back(rope.angles(p));
  }
  if (request.mask) {
    if (request.mask->rows() != T || request.mask->cols() != first_slot + T) {
      throw Error("forward: attention mask is " + std::to_string(request.mask->rows()) + "x" +
                  std::to_string(request.mask->cols()) + ", expected " + std::to_string(T) + "x" +
                  std::to_string(first_slot + T) + " (new tokens x cache length + new tokens)");
    }
    block.mask = &*request.mask;
  } else {
    mask_storage = AttentionMask::causal(first_slot, T);
    block.mask = &*mask_storage;
  }
  return block;
}

ForwardResult Transformer::forward(KVCache& cache_base, const ForwardRequest& request) const {
  auto* cache = dynamic_cast<DenseKVCache*>(&cache_base);
  if (!cache) throw Error("forward: the KV cache was not created by the reference backend");
  const ModelConfig& c = config_;
  const int T = static_cast<int>(request.tokens.size());
  const int H = c.hidden_size, L = c.num_hidden_layers;
  check_forward_request(c, request);

  std::optional<AttentionMask> mask_storage;
  TokenBlock block = make_token_block(request, rope_, cache->length(), mask_storage);

  Matrix x(T, H);  // x: (T, H) residual stream
  for (int t = 0; t < T; ++t) {
    x.row(t) = weights_.embed_tokens.row(request.tokens[t]);
  }
  const int first = cache->append(T, block.positions.data());
  (void)first;

  ForwardResult result;
  const int n_aux = static_cast<int>(request.aux_layers.size());
  if (n_aux) result.aux_hidden.resize(T, static_cast<Eigen::Index>(n_aux) * H);
  auto record_aux = [&](int index, const Matrix& state) {
    for (int a = 0; a < n_aux; ++a)
      if (request.aux_layers[a] == index) result.aux_hidden.middleCols(static_cast<Eigen::Index>(a) * H, H) = state;
  };

  if (request.layer_states) result.layer_states.reserve(static_cast<std::size_t>(4 * L));
  for (int l = 0; l < L; ++l) {
    record_aux(l, x);
    const LayerWeights& w = weights_.layers[l];
    Matrix attn_in = ops::rms_norm(x, w.input_layernorm, c.rms_norm_eps);
    if (!request.layer_states) {
      x = decoder_layer(w, c, rope_, x, attn_in, *cache, l, block);
      continue;
    }
    LayerSubsteps sub;
    x = decoder_layer(w, c, rope_, x, attn_in, *cache, l, block, &sub);
    result.layer_states.push_back(std::move(attn_in));
    result.layer_states.push_back(std::move(sub.attention));
    result.layer_states.push_back(std::move(sub.post_attention_norm));
    result.layer_states.push_back(x);
  }
  Matrix h = ops::rms_norm(x, weights_.norm, c.rms_norm_eps);  // h: (T, H) after the final norm
  record_aux(L, h);

  if (!request.logit_rows.empty()) {
    Matrix rows(request.logit_rows.size(), H);
    for (size_t i = 0; i < request.logit_rows.size(); ++i) rows.row(i) = h.row(request.logit_rows[i]);
    result.logits = ops::linear(rows, weights_.output_head());  // (R, V)
  }
  apply_argmax_only(request, result);
  if (request.final_hidden) result.final_hidden = std::move(h);
  return result;
}

}  // namespace specdec
