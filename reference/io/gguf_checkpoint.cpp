#include "reference/io/gguf_checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string>

#include "reference/core/error.hpp"

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

// The llama.cpp converter's permutation of q/k rows, undone: within each head of `hd` rows, GGUF
// row 2i + j holds Hugging Face row j·hd/2 + i (i < hd/2, j ∈ {0, 1}).
void undo_rope_interleave(Matrix& m, int heads, int hd) {
  const Matrix src = m;
  const int half = hd / 2;
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < half; ++i) {
      for (int j = 0; j < 2; ++j) m.row(h * hd + j * half + i) = src.row(h * hd + 2 * i + j);
    }
  }
}

void undo_rope_interleave(Vector& v, int heads, int hd) {
  if (v.size() == 0) return;
  const Vector src = v;
  const int half = hd / 2;
  for (int h = 0; h < heads; ++h) {
    for (int i = 0; i < half; ++i) {
      for (int j = 0; j < 2; ++j) v(h * hd + j * half + i) = src(h * hd + 2 * i + j);
    }
  }
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

LlamaModel load_gguf_checkpoint(const std::filesystem::path& path) {
  const GgufFile f(path);
  const std::string file = path.string();
  LlamaModel model;
  model.config = parse_model_config(gguf_hf_config(f), file);
  const ModelConfig& c = model.config;
  const Arch& a = arch_of(f);

  auto matrix = [&](const std::string& name, Matrix& m, int64_t rows, int64_t cols) {
    if (!f.has_tensor(name)) throw Error(file + ": missing tensor '" + name + "'");
    const GgufTensorInfo& t = f.tensor(name);
    if (t.shape() != std::vector<int64_t>{rows, cols}) {
      throw Error(file + ": tensor '" + name + "' has shape " + shape_string(t.shape()) + ", the metadata calls for " +
                  shape_string({rows, cols}));
    }
    // Eigen's Matrix is row-major here (tensor.hpp): rows of `cols` floats, as GGUF stores them.
    m.resize(rows, cols);
    f.dequantize_into(name, std::span<float>(m.data(), static_cast<std::size_t>(m.size())));
  };
  auto vector = [&](const std::string& name, Vector& v, int64_t n, bool optional = false) {
    if (!f.has_tensor(name)) {
      if (optional) return;
      throw Error(file + ": missing tensor '" + name + "'");
    }
    const GgufTensorInfo& t = f.tensor(name);
    if (t.numel() != static_cast<uint64_t>(n) || t.ne[0] != static_cast<uint64_t>(n)) {
      throw Error(file + ": tensor '" + name + "' has shape " + shape_string(t.shape()) + ", the metadata calls for [" +
                  std::to_string(n) + "]");
    }
    v.resize(n);
    f.dequantize_into(name, std::span<float>(v.data(), static_cast<std::size_t>(n)));
  };

  const int64_t H = c.hidden_size, I = c.intermediate_size, V = c.vocab_size;
  const int64_t q = c.q_dim(), kv = c.kv_dim(), hd = c.head_dim;
  LlamaWeights& w = model.weights;
  // The last layer's tensors are looked for before anything is sized by block_count.
  const std::string last = "blk." + std::to_string(c.num_hidden_layers - 1) + ".attn_q.weight";
  if (!f.has_tensor(last)) {
    throw Error(file + ": block_count is " + std::to_string(c.num_hidden_layers) + " but tensor '" + last + "' is missing");
  }
  matrix("token_embd.weight", w.embed_tokens, V, H);
  w.layers.resize(static_cast<std::size_t>(c.num_hidden_layers));
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    LayerWeights& l = w.layers[static_cast<std::size_t>(i)];
    const std::string b = "blk." + std::to_string(i) + ".";
    vector(b + "attn_norm.weight", l.input_layernorm, H);
    matrix(b + "attn_q.weight", l.q_proj, q, H);
    matrix(b + "attn_k.weight", l.k_proj, kv, H);
    matrix(b + "attn_v.weight", l.v_proj, kv, H);
    matrix(b + "attn_output.weight", l.o_proj, H, q);
    if (c.attention_bias) {
      vector(b + "attn_q.bias", l.q_bias, q);
      vector(b + "attn_k.bias", l.k_bias, kv);
      vector(b + "attn_v.bias", l.v_bias, kv);
    }
    if (c.o_proj_bias) vector(b + "attn_output.bias", l.o_bias, H);
    if (c.qk_norm) {
      vector(b + "attn_q_norm.weight", l.q_norm, hd);
      vector(b + "attn_k_norm.weight", l.k_norm, hd);
    }
    vector(b + "ffn_norm.weight", l.post_attention_layernorm, H);
    matrix(b + "ffn_gate.weight", l.gate_proj, I, H);
    matrix(b + "ffn_up.weight", l.up_proj, I, H);
    matrix(b + "ffn_down.weight", l.down_proj, H, I);
    if (c.mlp_bias) {
      vector(b + "ffn_gate.bias", l.gate_bias, I);
      vector(b + "ffn_up.bias", l.up_bias, I);
      vector(b + "ffn_down.bias", l.down_bias, H);
    }
    if (a.interleaved_rope) {
      undo_rope_interleave(l.q_proj, c.num_attention_heads, c.head_dim);
      undo_rope_interleave(l.q_bias, c.num_attention_heads, c.head_dim);
      undo_rope_interleave(l.k_proj, c.num_key_value_heads, c.head_dim);
      undo_rope_interleave(l.k_bias, c.num_key_value_heads, c.head_dim);
    }
  }
  vector("output_norm.weight", w.norm, H);
  if (!c.tie_word_embeddings) matrix("output.weight", w.lm_head, V, H);
  check_checkpoint_weights(c, w, file);
  return model;
}

}  // namespace specdec
