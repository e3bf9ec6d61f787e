#include "runtime/random_drafters.hpp"

#include <algorithm>

#include "reference/core/error.hpp"

namespace specdec {

ModelConfig draft_lm_config(const ModelConfig& target) {
  ModelConfig c = target;
  c.num_attention_heads = std::max(1, target.num_attention_heads / 4);
  // KV heads must divide the query heads.
  int kv = std::max(1, target.num_key_value_heads / 4);
  while (c.num_attention_heads % kv != 0) --kv;
  c.num_key_value_heads = kv;
  c.head_dim = target.head_dim;
  c.hidden_size = c.num_attention_heads * c.head_dim;
  c.intermediate_size = std::max(1, target.intermediate_size / 4);
  c.num_hidden_layers = std::max(1, target.num_hidden_layers / 4);
  return c;
}

EagleHeadConfig random_head_config(EagleKind kind, const ModelConfig& target, int layers, std::vector<int> aux_layers) {
  if (layers < 0) throw Error("head layers must be >= 0 (0 = the kind's default)");
  EagleHeadConfig c;
  c.kind = kind;
  if (kind == EagleKind::eagle1) {
    c.layout = "safeailab";
    c.fc_bias = true;
  } else if (kind == EagleKind::eagle3) {
    c.layout = "safeailab";
  } else if (kind == EagleKind::mtp) {
    c.layout = "deepseek";  // one module of the target's own layer shape
    c.target_layers = target.num_hidden_layers;
  } else {
    c.layout = "aws";
    c.own_embeddings = true;
    c.mask_token_id = target.vocab_size - 1;
    c.trained_depth = 8;
  }
  c.num_layers = layers > 0 ? layers : (kind == EagleKind::peagle ? 2 : 1);
  c.layer = target;
  c.layer.num_hidden_layers = c.num_layers;
  c.target_hidden = target.hidden_size;
  c.target_vocab = c.draft_vocab = target.vocab_size;
  if (!c.reads_final_hidden()) c.aux_layers = aux_layers.empty() ? default_aux_layers(target.num_hidden_layers) : std::move(aux_layers);
  return c;
}

}  // namespace specdec
