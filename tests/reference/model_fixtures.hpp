#pragma once
// Small random-weight model configurations for the reference tests: one of each family feature
// (grouped-query attention, tied and untied heads, Qwen2 biases, Qwen3 q/k norms, rope scaling).
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "reference/model/kv_cache.hpp"
#include "reference/model/model_config.hpp"
#include "reference/model/random_weights.hpp"
#include "reference/model/transformer.hpp"

namespace specdec::testing {

struct NamedConfig {
  std::string name;
  ModelConfig config;
};

inline ModelConfig tiny_llama(int vocab = 97) {
  ModelConfig c;
  c.hidden_size = 48;
  c.intermediate_size = 80;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 6;
  c.num_key_value_heads = 2;  // GQA: 3 query heads per KV head
  c.head_dim = 8;
  c.vocab_size = vocab;
  c.max_position_embeddings = 256;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  c.eos_token_ids = {1};
  c.bos_token_id = 0;
  return c;
}

inline std::vector<NamedConfig> fixture_configs() {
  std::vector<NamedConfig> out;
  out.push_back({"llama_gqa_untied", tiny_llama()});
  ModelConfig tied = tiny_llama();
  tied.tie_word_embeddings = true;
  tied.num_key_value_heads = 6;  // plain multi-head attention
  tied.rope_scaling.type = RopeScaling::Type::llama3;
  tied.rope_scaling.factor = 8.0;
  tied.rope_scaling.low_freq_factor = 1.0;
  tied.rope_scaling.high_freq_factor = 4.0;
  tied.rope_scaling.original_max_position_embeddings = 16;
  out.push_back({"llama_mha_tied_llama3rope", tied});
  ModelConfig qwen2 = tiny_llama();
  qwen2.model_type = "qwen2";
  qwen2.architecture = "Qwen2ForCausalLM";
  qwen2.attention_bias = true;
  qwen2.num_key_value_heads = 1;  // multi-query
  out.push_back({"qwen2_bias_mqa", qwen2});
  ModelConfig qwen3 = tiny_llama();
  qwen3.model_type = "qwen3";
  qwen3.architecture = "Qwen3ForCausalLM";
  qwen3.qk_norm = true;
  qwen3.head_dim = 16;  // head_dim differs from H / nh, as in Qwen3
  qwen3.tie_word_embeddings = true;
  out.push_back({"qwen3_qknorm_tied", qwen3});
  return out;
}

inline Transformer make_model(const ModelConfig& c, uint64_t seed) {
  // A larger spread than real models keeps the logits well apart, so tests exercise real choices.
  return Transformer(c, random_llama_weights(c, seed, 0.08f));
}

// n tokens drawn uniformly from [0, vocab).
inline std::vector<int32_t> random_tokens(int n, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int32_t> t(static_cast<std::size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(rng() % static_cast<uint64_t>(vocab));
  return t;
}

// Same shape and the same bits in every element.
inline bool bitwise_equal(const Matrix& a, const Matrix& b) {
  // An empty matrix's data() is null, and memcmp must not be given null even for 0 bytes.
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         (a.size() == 0 || std::memcmp(a.data(), b.data(), sizeof(float) * static_cast<std::size_t>(a.size())) == 0);
}

// The reference's cache behind the KVCache interface (tests compare caches bitwise).
inline DenseKVCache& dense_cache(KVCache& c) { return dynamic_cast<DenseKVCache&>(c); }
inline const DenseKVCache& dense_cache(const KVCache& c) { return dynamic_cast<const DenseKVCache&>(c); }

}  // namespace specdec::testing
