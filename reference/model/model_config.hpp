#pragma once
// Shape and numerics of a Llama-family model, as read from a Hugging Face config.json
// (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM).
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace specdec {

struct RopeScaling {
  enum class Type { none, linear, dynamic, llama3 };
  Type type = Type::none;
  double factor = 1.0;
  // llama3 only.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // llama3 and dynamic: the context length the model was trained with.
  int original_max_position_embeddings = 0;

  bool operator==(const RopeScaling&) const = default;
};

struct ModelConfig {
  std::string architecture = "LlamaForCausalLM";  // architectures[0]
  std::string model_type = "llama";               // llama | mistral | qwen2 | qwen3
  int hidden_size = 0;                            // H
  int intermediate_size = 0;                      // I
  int num_hidden_layers = 0;                      // L
  int num_attention_heads = 0;                    // nh
  int num_key_value_heads = 0;                    // nkv (defaults to nh)
  int head_dim = 0;                               // hd (defaults to H / nh)
  int vocab_size = 0;                             // V
  int max_position_embeddings = 2048;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;   // q/k/v (and o for Llama) projections carry biases
  bool o_proj_bias = false;      // Llama attention_bias also biases o_proj; Qwen2 does not
  bool mlp_bias = false;
  bool qk_norm = false;          // Qwen3: per-head RMSNorm on q and k before RoPE
  int sliding_window = 0;        // 0 = full attention
  // Qwen2/Qwen3: only layers with index >= max_window_layers use the sliding window (0 = all
  // layers, as Mistral). Use layer_sliding_window() rather than reading both fields.
  int max_window_layers = 0;
  std::string hidden_act = "silu";
  int bos_token_id = -1;         // -1 = none
  std::vector<int> eos_token_ids;
  std::string torch_dtype = "float32";

  int q_dim() const { return num_attention_heads * head_dim; }
  int kv_dim() const { return num_key_value_heads * head_dim; }
  bool is_eos(int token) const;
  // The attention window of one layer: 0 = full attention.
  int layer_sliding_window(int layer) const {
    return layer >= max_window_layers ? sliding_window : 0;
  }

  bool operator==(const ModelConfig&) const = default;
};

// Parses a config.json object; `source` names the file in error messages. Fills defaults the way
// Hugging Face does and validates the result (throws specdec::Error).
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source);
ModelConfig load_model_config(const std::filesystem::path& config_json);
// Checks internal consistency (positive sizes, heads dividing, rope parameters); throws on error.
void validate_model_config(const ModelConfig& c, const std::string& source);
// The config.json object Hugging Face would write for this model.
nlohmann::json model_config_to_json(const ModelConfig& c);
// Writes model_config_to_json(c) to `config_json` atomically (two-space indented, like HF).
void save_model_config(const std::filesystem::path& config_json, const ModelConfig& c);

}  // namespace specdec
