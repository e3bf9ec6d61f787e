#pragma once
// Writes GGUF v3 files for tests: metadata of every value type, tensors of any ggml type from
// their stored bytes, deliberately broken files (raw edits of the bytes), and a model as llama.cpp's
// converter writes one (write_gguf_model). The real-world writer (the `gguf` Python package) is
// exercised by the cross-library tests.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "reference/core/half.hpp"
#include "reference/io/llama_checkpoint.hpp"

namespace specdec::testing {

class GgufWriter {
 public:
  // Value types (GgufType).
  enum : uint32_t { U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 };

  void kv_u32(const std::string& key, uint32_t v) { key_type(key, U32); put(v); ++n_kv_; }
  void kv_i32(const std::string& key, int32_t v) { key_type(key, I32); put(v); ++n_kv_; }
  void kv_u64(const std::string& key, uint64_t v) { key_type(key, U64); put(v); ++n_kv_; }
  void kv_f32(const std::string& key, float v) { key_type(key, F32); put(v); ++n_kv_; }
  void kv_bool(const std::string& key, bool v) { key_type(key, BOOL); put(static_cast<uint8_t>(v)); ++n_kv_; }
  void kv_string(const std::string& key, const std::string& v) { key_type(key, STRING); str(meta_, v); ++n_kv_; }
  void kv_strings(const std::string& key, const std::vector<std::string>& v) {
    key_type(key, ARRAY);
    put(static_cast<uint32_t>(STRING));
    put(static_cast<uint64_t>(v.size()));
    for (const std::string& s : v) str(meta_, s);
    ++n_kv_;
  }
  void kv_i32s(const std::string& key, const std::vector<int32_t>& v) {
    key_type(key, ARRAY);
    put(static_cast<uint32_t>(I32));
    put(static_cast<uint64_t>(v.size()));
    for (int32_t x : v) put(x);
    ++n_kv_;
  }
  void kv_f32s(const std::string& key, const std::vector<float>& v) {
    key_type(key, ARRAY);
    put(static_cast<uint32_t>(F32));
    put(static_cast<uint64_t>(v.size()));
    for (float x : v) put(x);
    ++n_kv_;
  }
  // Any bytes after the key (type and value), for malformed metadata.
  void kv_raw(const std::string& key, const std::string& type_and_value) {
    str(meta_, key);
    meta_ += type_and_value;
    ++n_kv_;
  }

  // A tensor of ggml type `type` with dimensions `ne` (ne[0] fastest) stored as `data`.
  void tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, std::string data) {
    tensors_.push_back({name, std::move(ne), type, std::move(data)});
  }
  // A float32 matrix [rows, cols] (row-major floats).
  void tensor_f32(const std::string& name, uint64_t rows, uint64_t cols, const float* values) {
    tensor(name, cols == 0 ? std::vector<uint64_t>{rows} : std::vector<uint64_t>{cols, rows}, 0,
           std::string(reinterpret_cast<const char*>(values), (cols == 0 ? rows : rows * cols) * 4));
  }

  std::string bytes(uint32_t version = 3, uint64_t alignment = 32) const {
    std::string out = "GGUF";
    append(out, version);
    append(out, static_cast<uint64_t>(tensors_.size()));
    append(out, static_cast<uint64_t>(n_kv_));
    out += meta_;
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const Tensor& t : tensors_) {
      str(out, t.name);
      append(out, static_cast<uint32_t>(t.ne.size()));
      for (uint64_t d : t.ne) append(out, d);
      append(out, t.type);
      append(out, offset);
      offsets.push_back(offset);
      offset += (t.data.size() + alignment - 1) / alignment * alignment;
    }
    out.resize((out.size() + alignment - 1) / alignment * alignment, '\0');
    const std::size_t data_start = out.size();
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      out.resize(data_start + offsets[i], '\0');
      out += tensors_[i].data;
    }
    return out;
  }
  void write(const std::filesystem::path& path, uint32_t version = 3) const {
    std::ofstream(path, std::ios::binary) << bytes(version);
  }

  template <typename T>
  static void append(std::string& out, T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.append(b, sizeof(T));
  }
  static void str(std::string& out, const std::string& s) {
    append(out, static_cast<uint64_t>(s.size()));
    out += s;
  }

 private:
  struct Tensor {
    std::string name;
    std::vector<uint64_t> ne;
    uint32_t type;
    std::string data;
  };
  template <typename T>
  void put(T v) { append(meta_, v); }
  void key_type(const std::string& key, uint32_t type) {
    str(meta_, key);
    put(type);
  }

  std::string meta_;
  uint64_t n_kv_ = 0;
  std::vector<Tensor> tensors_;
};

inline std::string gguf_u16(uint16_t v) { return std::string(reinterpret_cast<const char*>(&v), 2); }

// llama.cpp's converter: within each head, Hugging Face row j·hd/2 + i goes to GGUF row 2i + j.
template <typename M>
inline M interleave_rope(const M& hf, int heads, int hd) {
  M out = hf;
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < hd / 2; ++i)
      for (int j = 0; j < 2; ++j) out.row(h * hd + 2 * i + j) = hf.row(h * hd + j * hd / 2 + i);
  return out;
}

enum class GgufStorage { f32, bf16, q8_0 };

// `n` floats as a GGUF tensor stores them (Q8_0: d = max|x| / 127, q = round(x / d), per 32).
inline std::string gguf_stored(const float* x, std::size_t n, GgufStorage s) {
  std::string out;
  if (s == GgufStorage::f32) return std::string(reinterpret_cast<const char*>(x), n * 4);
  if (s == GgufStorage::bf16) {
    for (std::size_t i = 0; i < n; ++i) out += gguf_u16(float_to_bfloat16(x[i]));
    return out;
  }
  for (std::size_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (int k = 0; k < 32; ++k) amax = std::max(amax, std::fabs(x[32 * b + k]));
    const float d = amax / 127.0f;
    out += gguf_u16(float_to_half(d));
    for (int k = 0; k < 32; ++k) out += static_cast<char>(static_cast<int8_t>(d == 0 ? 0 : std::lround(x[32 * b + k] / d)));
  }
  return out;
}

// `m` written as GGUF the way llama.cpp's converter writes it; matrices stored as `s`, vectors F32;
// `extra` adds metadata (a tokenizer).
inline void write_gguf_model(const std::filesystem::path& path, const LlamaModel& m, const std::string& arch, GgufStorage s,
                             const std::function<void(GgufWriter&)>& extra = {}) {
  const ModelConfig& c = m.config;
  GgufWriter w;
  if (extra) extra(w);
  w.kv_string("general.architecture", arch);
  w.kv_u32(arch + ".block_count", c.num_hidden_layers);
  w.kv_u32(arch + ".embedding_length", c.hidden_size);
  w.kv_u32(arch + ".feed_forward_length", c.intermediate_size);
  w.kv_u32(arch + ".attention.head_count", c.num_attention_heads);
  w.kv_u32(arch + ".attention.head_count_kv", c.num_key_value_heads);
  w.kv_u32(arch + ".attention.key_length", c.head_dim);
  w.kv_u32(arch + ".attention.value_length", c.head_dim);
  w.kv_u32(arch + ".rope.dimension_count", c.head_dim);
  w.kv_u32(arch + ".context_length", c.max_position_embeddings);
  w.kv_f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  w.kv_f32(arch + ".rope.freq_base", static_cast<float>(c.rope_theta));
  if (c.bos_token_id >= 0) w.kv_u32("tokenizer.ggml.bos_token_id", c.bos_token_id);
  if (!c.eos_token_ids.empty()) w.kv_u32("tokenizer.ggml.eos_token_id", c.eos_token_ids.front());
  const uint32_t type = s == GgufStorage::f32 ? 0 : s == GgufStorage::bf16 ? 30 : 8;
  auto mat = [&](const std::string& name, const Matrix& x) {
    w.tensor(name, {static_cast<uint64_t>(x.cols()), static_cast<uint64_t>(x.rows())}, type,
             gguf_stored(x.data(), static_cast<std::size_t>(x.size()), s));
  };
  auto vec = [&](const std::string& name, const Vector& x) {
    if (x.size()) w.tensor_f32(name, static_cast<uint64_t>(x.size()), 0, x.data());
  };
  const bool interleave = arch == "llama";
  mat("token_embd.weight", m.weights.embed_tokens);
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    const LayerWeights& l = m.weights.layers[static_cast<std::size_t>(i)];
    const std::string b = "blk." + std::to_string(i) + ".";
    vec(b + "attn_norm.weight", l.input_layernorm);
    mat(b + "attn_q.weight", interleave ? interleave_rope(l.q_proj, c.num_attention_heads, c.head_dim) : l.q_proj);
    mat(b + "attn_k.weight", interleave ? interleave_rope(l.k_proj, c.num_key_value_heads, c.head_dim) : l.k_proj);
    mat(b + "attn_v.weight", l.v_proj);
    mat(b + "attn_output.weight", l.o_proj);
    vec(b + "attn_q.bias", l.q_bias);
    vec(b + "attn_k.bias", l.k_bias);
    vec(b + "attn_v.bias", l.v_bias);
    vec(b + "attn_q_norm.weight", l.q_norm);
    vec(b + "attn_k_norm.weight", l.k_norm);
    vec(b + "ffn_norm.weight", l.post_attention_layernorm);
    mat(b + "ffn_gate.weight", l.gate_proj);
    mat(b + "ffn_up.weight", l.up_proj);
    mat(b + "ffn_down.weight", l.down_proj);
  }
  vec("output_norm.weight", m.weights.norm);
  if (m.weights.lm_head.size()) mat("output.weight", m.weights.lm_head);
  w.write(path);
}

}  // namespace specdec::testing
