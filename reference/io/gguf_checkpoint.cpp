#include "reference/io/gguf_checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "reference/core/error.hpp"
#include "reference/io/safetensors.hpp"

namespace specdec {
namespace {

using nlohmann::json;

struct Arch {
  const char* gguf;          // general.architecture
  const char* model_type;    // config.json's model_type
  const char* class_name;    // architectures[0]
  bool interleaved_rope;     // q/k rows permuted by llama.cpp's converter
};

constexpr Arch kArchs[] = {
    {"llama", "llama", "LlamaForCausalLM", true},
    {"mistral", "mistral", "MistralForCausalLM", true},
    {"qwen2", "qwen2", "Qwen2ForCausalLM", false},
    {"qwen3", "qwen3", "Qwen3ForCausalLM", false},
};

const Arch& arch_of(const GgufFile& f) {
  const auto name = f.get_string("general.architecture");
  if (!name) throw Error(f.path().string() + ": metadata 'general.architecture' is missing (not a model file?)");
  for (const Arch& a : kArchs) {
    if (*name == a.gguf) return a;
  }
  throw Error(f.path().string() + ": architecture '" + *name +
              "' is not supported (specdec runs llama, mistral, qwen2 and qwen3)");
}

// A float32 metadata value as the decimal it was written from: 1e-05 stored as f32 reads back
// as 9.99999975e-06, but config.json (and so the Hugging Face model) says 1e-05.
double shortest_decimal(double stored_f32) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(stored_f32));
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

int64_t required_int(const GgufFile& f, const std::string& key) {
  const auto v = f.get_int(key);
  if (!v) throw Error(f.path().string() + ": metadata '" + key + "' is missing");
  return *v;
}

// The ggml types of the model's matrices decide torch_dtype: all F32, F16 or BF16 keep that
// precision; quantized weights dequantize to values that only float32 holds.
std::string stored_dtype(const GgufFile& f) {
  std::set<uint32_t> types;
  for (const GgufTensorInfo& t : f.tensors()) {
    if (t.ne.size() == 2) types.insert(t.type);
  }
  if (types.size() == 1) {
    switch (static_cast<GgmlType>(*types.begin())) {
      case GgmlType::F16: return "float16";
      case GgmlType::BF16: return "bfloat16";
      default: break;
    }
  }
  return "float32";
}

}  // namespace

json gguf_hf_config(const GgufFile& f) {
  const Arch& a = arch_of(f);
  const std::string file = f.path().string();
  const std::string p = std::string(a.gguf) + ".";
  json j;
  j["architectures"] = json::array({a.class_name});
  j["model_type"] = a.model_type;
  j["hidden_size"] = required_int(f, p + "embedding_length");
  j["intermediate_size"] = required_int(f, p + "feed_forward_length");
  j["num_hidden_layers"] = required_int(f, p + "block_count");
  const int64_t heads = required_int(f, p + "attention.head_count");
  j["num_attention_heads"] = heads;
  j["num_key_value_heads"] = f.get_int(p + "attention.head_count_kv").value_or(heads);
  if (const auto hd = f.get_int(p + "attention.key_length")) {
    j["head_dim"] = *hd;
    if (const auto vd = f.get_int(p + "attention.value_length"); vd && *vd != *hd) {
      throw Error(file + ": attention.value_length " + std::to_string(*vd) + " differs from key_length " +
                  std::to_string(*hd) + "; specdec's attention has one head size");
    }
  }
  if (const auto ctx = f.get_int(p + "context_length")) j["max_position_embeddings"] = *ctx;
  if (const auto eps = f.get_float(p + "attention.layer_norm_rms_epsilon")) j["rms_norm_eps"] = shortest_decimal(*eps);
  if (const auto theta = f.get_float(p + "rope.freq_base")) j["rope_theta"] = shortest_decimal(*theta);

  // The embedding's rows are the model's vocabulary (often padded past the tokenizer's).
  if (!f.has_tensor("token_embd.weight")) throw Error(file + ": tensor 'token_embd.weight' is missing");
  const GgufTensorInfo& embd = f.tensor("token_embd.weight");
  if (embd.ne.size() != 2) throw Error(file + ": tensor 'token_embd.weight' must have 2 dimensions, has shape " + shape_string(embd.shape()));
  j["vocab_size"] = embd.ne[1];
  j["tie_word_embeddings"] = !f.has_tensor("output.weight");

  const std::string layer0 = "blk.0.";
  if (std::string(a.model_type) == "llama") {
    j["attention_bias"] = f.has_tensor(layer0 + "attn_q.bias");
    j["mlp_bias"] = f.has_tensor(layer0 + "ffn_gate.bias");
  } else if (std::string(a.model_type) == "qwen3") {
    j["attention_bias"] = f.has_tensor(layer0 + "attn_q.bias");
  }
  if (const auto window = f.get_int(p + "attention.sliding_window"); window && *window > 0) {
    if (std::string(a.model_type) == "mistral") {
      j["sliding_window"] = *window;
    } else if (std::string(a.model_type) != "llama") {
      j["use_sliding_window"] = true;
      j["sliding_window"] = *window;
      j["max_window_layers"] = 0;
    }
  } else if (std::string(a.model_type) == "mistral") {
    j["sliding_window"] = nullptr;
  }

  // RoPE: full rotary dimension only; linear scaling; llama3's frequency factors are refused.
  const int64_t head_dim = j.contains("head_dim") ? j["head_dim"].get<int64_t>() : (heads > 0 ? j["hidden_size"].get<int64_t>() / heads : 0);
  if (const auto rot = f.get_int(p + "rope.dimension_count"); rot && *rot != head_dim) {
    throw Error(file + ": rope.dimension_count " + std::to_string(*rot) + " rotates part of each head (" +
                std::to_string(head_dim) + "); specdec rotates whole heads");
  }
  if (f.has_tensor("rope_freqs.weight")) {
    throw Error(file + ": tensor 'rope_freqs.weight' (per-frequency RoPE factors, as Llama 3.1 files carry) is not "
                "supported; load the model's Hugging Face checkpoint instead");
  }
  if (const auto type = f.get_string(p + "rope.scaling.type"); type && *type != "none") {
    if (*type != "linear") {
      throw Error(file + ": rope.scaling.type '" + *type + "' is not supported (specdec reads none and linear)");
    }
    const auto factor = f.get_float(p + "rope.scaling.factor");
    if (!factor) throw Error(file + ": rope.scaling.type is linear but rope.scaling.factor is missing");
    j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", shortest_decimal(*factor)}};
  }

  // Special tokens: BOS, and every id that ends generation (EOS, end of turn, end of message).
  if (const auto bos = f.get_int("tokenizer.ggml.bos_token_id")) j["bos_token_id"] = *bos;
  else j["bos_token_id"] = nullptr;
  json eos = json::array();
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (const auto id = f.get_int(key); id && std::find(eos.begin(), eos.end(), json(*id)) == eos.end()) eos.push_back(*id);
  }
  j["eos_token_id"] = eos.empty() ? json(nullptr) : eos;
  j["torch_dtype"] = stored_dtype(f);
  return j;
}

bool gguf_interleaved_rope(const GgufFile& file) { return arch_of(file).interleaved_rope; }

int64_t gguf_rope_source_row(int64_t row, int64_t head_dim) {
  const int64_t head = row / head_dim, o = row % head_dim, half = head_dim / 2;
  return head * head_dim + 2 * (o % half) + o / half;
}

std::string gguf_tensor_name(const std::string& hf_name) {
  static const std::pair<const char*, const char*> kModel[] = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"},
  };
  static const std::pair<const char*, const char*> kLayer[] = {
      {"input_layernorm", "attn_norm"},      {"self_attn.q_proj", "attn_q"},     {"self_attn.k_proj", "attn_k"},
      {"self_attn.v_proj", "attn_v"},        {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
      {"self_attn.k_norm", "attn_k_norm"},   {"post_attention_layernorm", "ffn_norm"}, {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"},             {"mlp.down_proj", "ffn_down"},
  };
  for (const auto& [hf, gguf] : kModel)
    if (hf_name == hf) return gguf;
  const std::string layers = "model.layers.";
  if (hf_name.compare(0, layers.size(), layers) != 0) return "";
  const std::size_t dot = hf_name.find('.', layers.size());
  if (dot == std::string::npos) return "";
  const std::string index = hf_name.substr(layers.size(), dot - layers.size());
  const std::string rest = hf_name.substr(dot + 1);  // "mlp.up_proj.weight"
  const std::size_t last = rest.rfind('.');
  if (last == std::string::npos) return "";
  const std::string module = rest.substr(0, last), kind = rest.substr(last + 1);
  for (const auto& [hf, gguf] : kLayer)
    if (module == hf) return "blk." + index + "." + gguf + "." + kind;
  return "";
}

}  // namespace specdec
