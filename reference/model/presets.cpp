#include "reference/model/presets.hpp"

#include "reference/core/error.hpp"

namespace specdec {

namespace {

ModelConfig llama_shape(int hidden, int intermediate, int layers, int heads, int kv_heads, int vocab) {
  ModelConfig c;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.vocab_size = vocab;
  c.max_position_embeddings = 4096;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000.0;
  c.bos_token_id = 1;  // the Llama tokenizer's <s> and </s>; the byte-vocabulary preset overrides them
  c.eos_token_ids = {2};
  return c;
}

std::vector<ModelPreset> build() {
  std::vector<ModelPreset> p;
  // Byte vocabulary: <bos> 0, <eos> 1, <pad> 2, bytes 3..258.
  ModelConfig tiny = llama_shape(256, 688, 4, 8, 4, 259);
  tiny.bos_token_id = 0;
  tiny.eos_token_ids = {1};
  tiny.max_position_embeddings = 2048;
  p.push_back({"tiny", "byte vocabulary, 4 layers, hidden 256, 8 heads / 4 KV heads", tiny});
  // Calibration pair (scripts/calibrate_reference.sh): a target whose single-thread forward is
  // tens of milliseconds of real work, and a draft LM about five times cheaper per forward with
  // the same vocabulary.
  ModelConfig m22 = llama_shape(256, 688, 8, 4, 2, 32000);
  p.push_back({"llama-22m", "32000 vocab, 8 layers, hidden 256, 4 heads / 2 KV heads (calibration target)", m22});
  ModelConfig m4 = llama_shape(64, 176, 2, 1, 1, 32000);
  p.push_back({"llama-4m-draft", "32000 vocab, 2 layers, hidden 64, 1 head (draft LM for llama-22m)", m4});
  ModelConfig m100 = llama_shape(768, 2048, 12, 12, 4, 32000);
  p.push_back({"llama-100m", "32000 vocab, 12 layers, hidden 768, 12 heads / 4 KV heads", m100});
  ModelConfig m500 = llama_shape(1536, 4096, 16, 12, 4, 32000);
  p.push_back({"llama-0.5b", "32000 vocab, 16 layers, hidden 1536, 12 heads / 4 KV heads", m500});
  ModelConfig m1b = llama_shape(2048, 5632, 22, 32, 4, 32000);
  p.push_back({"llama-1b", "TinyLlama-1.1B shape: 22 layers, hidden 2048, 32 heads / 4 KV heads", m1b});
  // Llama-3.1-8B's shape (its RoPE scaling left out: it changes no cost): 16 GB in BF16, the
  // bandwidth-bound shape of the GPU benchmark (specdec_cuda_bench).
  ModelConfig m8b = llama_shape(4096, 14336, 32, 32, 8, 128256);
  m8b.rope_theta = 500000.0;
  m8b.max_position_embeddings = 131072;
  m8b.bos_token_id = 128000;
  m8b.eos_token_ids = {128001};
  p.push_back({"llama-3.1-8b", "Llama-3.1-8B shape: 32 layers, hidden 4096, 32 heads / 8 KV heads, 128256 vocab", m8b});
  return p;
}

}  // namespace

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = build();
  return presets;
}

const ModelPreset& find_model_preset(const std::string& name) {
  std::string known;
  for (const ModelPreset& p : model_presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw Error("unknown model preset '" + name + "'; known presets: " + known);
}

long long parameter_count(const ModelConfig& c) {
  const long long H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  long long layer = static_cast<long long>(c.q_dim()) * H * 2 + static_cast<long long>(c.kv_dim()) * H * 2 + 3 * H * I + 2 * H;
  if (c.attention_bias) layer += c.q_dim() + 2LL * c.kv_dim() + (c.o_proj_bias ? H : 0);
  if (c.qk_norm) layer += 2LL * c.head_dim;
  if (c.mlp_bias) layer += 2 * I + H;
  return V * H * (c.tie_word_embeddings ? 1 : 2) + layer * c.num_hidden_layers + H;
}

}  // namespace specdec
