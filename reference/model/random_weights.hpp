#pragma once
// Deterministic random weights for tests and examples: the same (config, seed) gives bitwise the
// same weights on every platform with IEEE floats and a correctly rounding libm.
#include <cstdint>

#include "reference/model/model_config.hpp"
#include "reference/model/weights.hpp"

namespace specdec {

// Linear weights, embeddings and biases ~ N(0, stddev²); norm weights (input, post-attention,
// final, Qwen3 q/k) = 1 + N(0, 0.1²), so that a wrong norm shows up in tests. Biases exist exactly
// where the config asks for them; lm_head is empty when tie_word_embeddings. Values are drawn from
// std::mt19937_64(seed) through a Box-Muller transform, tensor by tensor in LlamaWeights
// declaration order (embed_tokens, each layer's members, norm, lm_head), row-major.
LlamaWeights random_llama_weights(const ModelConfig& config, uint64_t seed, float stddev = 0.02f);

}  // namespace specdec
