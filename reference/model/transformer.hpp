#pragma once
// The reference Llama-family forward (Llama, Mistral, Qwen2, Qwen3): embeddings, L decoder layers
// (RMSNorm, RoPE, grouped-query attention over cache + new tokens under an explicit mask, SwiGLU),
// final norm, tied or separate LM head. fp32 throughout; batch- and thread-count-invariant.
#include <memory>

#include "reference/model/language_model.hpp"
#include "reference/model/rope.hpp"
#include "reference/model/weights.hpp"

namespace specdec {

class Transformer final : public LanguageModel {
 public:
  // Checks the config and every weight's shape against it (throws specdec::Error naming the tensor).
  Transformer(ModelConfig config, LlamaWeights weights);

  const ModelConfig& config() const override { return config_; }
  const LlamaWeights& weights() const { return weights_; }
  const Rope& rope() const { return rope_; }
  std::unique_ptr<KVCache> new_cache(int capacity) const override;
  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override;

 private:
  ModelConfig config_;
  LlamaWeights weights_;
  Rope rope_;
};

}  // namespace specdec
