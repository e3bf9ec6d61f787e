#include "simulator/model_shape.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <vector>

#include "reference/core/error.hpp"
#include "simulator/expert_popularity.hpp"
#include "simulator/mla.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

double dtype_bytes(const std::string& dtype) {
  if (dtype == "fp32") return 4.0;
  if (dtype == "bf16" || dtype == "fp16") return 2.0;
  if (dtype == "fp8" || dtype == "int8") return 1.0;
  if (dtype == "mxfp4") return 4.25 / 8.0;  // 4-bit values plus one 8-bit scale per 32
  if (dtype == "nvfp4") return 4.5 / 8.0;   // 4-bit values plus one FP8 E4M3 scale per 16
  throw Error("unknown dtype '" + dtype + "'; expected fp32, bf16, fp16, fp8, int8, nvfp4 or mxfp4");
}

std::string normalize_dtype(const std::string& dtype, const std::string& source) {
  if (dtype == "bfloat16" || dtype == "bf16") return "bf16";
  if (dtype == "float16" || dtype == "fp16" || dtype == "half") return "fp16";
  if (dtype == "float32" || dtype == "fp32" || dtype == "float") return "fp32";
  if (dtype == "fp8" || dtype == "float8_e4m3fn" || dtype == "float8_e5m2") return "fp8";
  if (dtype == "int8") return "int8";
  if (dtype == "nvfp4") return "nvfp4";
  throw Error(source + ": unknown dtype '" + dtype + "'; expected bf16, fp16, fp32, fp8, int8 or nvfp4 (or torch names)");
}

const char* weight_class_name(WeightClass c) {
  switch (c) {
    case WeightClass::other: return "other linear layers";
    case WeightClass::attention: return "attention";
    case WeightClass::dense_mlp: return "dense MLP";
    case WeightClass::routed_experts: return "routed experts";
    case WeightClass::shared_experts: return "shared experts";
    case WeightClass::router: return "router";
    case WeightClass::embedding: return "embedding";
    case WeightClass::lm_head: return "LM head";
    case WeightClass::mtp: return "MTP module";
    case WeightClass::count: break;
  }
  return "?";
}

WeightBytes WeightBytes::uniform(WeightClass c) const {
  WeightBytes w;
  w.bytes.fill((*this)[c]);
  w[WeightClass::mtp] = 0;
  return w;
}

WeightBytes weight_bytes_of(const ModelShape& m, const std::string& dtype) {
  WeightBytes w;
  w.bytes.fill(dtype_bytes(dtype));
  w[WeightClass::mtp] = 0;
  if (dtype == m.dtype)  // the checkpoint's own precision, class by class
    for (std::size_t c = 0; c < kWeightClasses; ++c)
      if (m.precision[c].bytes > 0) w.bytes[c] = m.precision[c].bytes;
  return w;
}

std::array<std::string, kWeightClasses> weight_compute_dtypes(const ModelShape& m, const std::string& dtype) {
  std::array<std::string, kWeightClasses> out{};
  if (dtype == m.dtype)
    for (std::size_t c = 0; c < kWeightClasses; ++c) out[c] = m.precision[c].dtype;
  return out;
}

double total_weight_bytes(const ModelShape& m, const WeightBytes& w) {
  const double H = m.hidden_size;
  const double L = m.num_layers;
  const double norms = L * 2.0 * H + H;  // two per layer and the final one
  double bytes = norms * w[WeightClass::other] + L * m.attention_params_per_layer() * w[WeightClass::attention];
  const double dense_layers = m.is_moe() ? m.dense_layers : L;
  bytes += dense_layers * 3.0 * H * m.intermediate_size * w[WeightClass::dense_mlp];
  if (m.is_moe()) {
    const double moe = m.moe_layers();
    bytes += moe * m.num_experts * 3.0 * H * m.expert_intermediate_size * w[WeightClass::routed_experts];
    bytes += moe * 3.0 * H * m.shared_expert_intermediate_size * w[WeightClass::shared_experts];
    bytes += moe * H * m.num_experts * w[WeightClass::router];
  }
  const double table = double(m.vocab_size) * H;
  bytes += table * w[WeightClass::embedding];
  if (!m.tie_word_embeddings) bytes += table * w[WeightClass::lm_head];
  return bytes;
}

double ModelShape::attention_params_per_layer() const {
  if (is_mla()) return mla_attention_params(*this);
  const double H = hidden_size;
  double p = H * (q_dim() + 2.0 * kv_dim()) + double(q_dim()) * H;
  if (attention_bias) p += q_dim() + 2.0 * kv_dim();
  return p;
}

double ModelShape::mlp_params_per_layer_total() const {
  const double H = hidden_size;
  if (!is_moe()) return 3.0 * H * intermediate_size;
  return num_experts * 3.0 * H * expert_intermediate_size + 3.0 * H * shared_expert_intermediate_size +
         H * num_experts;
}

double ModelShape::mlp_params_per_layer_active() const {
  const double H = hidden_size;
  if (!is_moe()) return 3.0 * H * intermediate_size;
  return experts_per_token * 3.0 * H * expert_intermediate_size + 3.0 * H * shared_expert_intermediate_size +
         H * num_experts;
}

ModelShape ModelShape::dense_layer_shape() const {
  ModelShape d = *this;
  d.num_experts = 0;
  d.experts_per_token = 0;
  d.expert_intermediate_size = 0;
  d.shared_expert_intermediate_size = 0;
  d.dense_layers = 0;
  return d;
}

double ModelShape::embedding_params() const {
  return double(vocab_size) * hidden_size * (tie_word_embeddings ? 1.0 : 2.0);
}

double ModelShape::total_params() const {
  const double per_layer = attention_params_per_layer() + mlp_params_per_layer_total() + 2.0 * hidden_size;
  const double dense_mlp = 3.0 * hidden_size * double(intermediate_size);
  return embedding_params() + num_layers * per_layer +
         dense_layers * (dense_mlp - mlp_params_per_layer_total()) + hidden_size;
}

double ModelShape::active_params() const {
  const double head = double(vocab_size) * hidden_size;
  const double per_layer = attention_params_per_layer() + mlp_params_per_layer_active() + 2.0 * hidden_size;
  const double dense_mlp = 3.0 * hidden_size * double(intermediate_size);
  return head + num_layers * per_layer + dense_layers * (dense_mlp - mlp_params_per_layer_active()) + hidden_size;
}

double ModelShape::kv_elements_per_token_per_layer(int tp) const {
  if (is_mla()) return double(kv_lora_rank) + qk_rope_head_dim;  // one latent, replicated on every device
  return 2.0 * std::ceil(double(num_kv_heads) / std::max(tp, 1)) * head_dim;  // K and V
}

double ModelShape::kv_bytes_per_token(double kv_bytes) const {
  return num_layers * kv_elements_per_token_per_layer(1) * kv_bytes;
}

void validate_model_shape(const ModelShape& m, const std::string& source) {
  auto positive = [&](int v, const char* field) {
    if (v <= 0) throw Error(source + ": '" + field + "' must be > 0, got " + std::to_string(v));
  };
  positive(m.hidden_size, "hidden_size");
  positive(m.num_layers, "num_hidden_layers");
  positive(m.num_heads, "num_attention_heads");
  positive(m.num_kv_heads, "num_key_value_heads");
  positive(m.head_dim, "head_dim");
  positive(m.vocab_size, "vocab_size");
  // Upper bounds far beyond any released model (hidden 16384 and 126 layers for Llama-3.1-405B,
  // 256 experts for DeepSeek-V3, vocabularies of 256k) and far inside what keeps the int products
  // (heads x head_dim) and the double sums of the cost model exact and finite.
  auto at_most = [&](long long v, long long most, const char* field) {
    if (v > most)
      throw Error(source + ": '" + field + "' is " + std::to_string(v) + ", more than the simulator supports (" +
                  std::to_string(most) + ")");
  };
  at_most(m.hidden_size, 1 << 18, "hidden_size");
  at_most(m.num_layers, 4096, "num_hidden_layers");
  at_most(m.num_heads, 4096, "num_attention_heads");
  at_most(m.num_kv_heads, 4096, "num_key_value_heads");
  at_most(m.head_dim, 4096, "head_dim");
  at_most(m.vocab_size, 1 << 24, "vocab_size");
  at_most(m.intermediate_size, 1 << 20, "intermediate_size");
  at_most(m.num_experts, 4096, "num_experts");
  at_most(m.expert_intermediate_size, 1 << 20, "moe_intermediate_size");
  at_most(m.shared_expert_intermediate_size, 1 << 24, "shared_expert_intermediate_size");
  at_most(m.sliding_window, 1 << 24, "sliding_window");
  if (m.intermediate_size < 0 || m.num_experts < 0 || m.experts_per_token < 0 || m.expert_intermediate_size < 0 ||
      m.shared_expert_intermediate_size < 0)
    throw Error(source + ": MLP and expert sizes must be >= 0");
  for (std::size_t c = 0; c < kWeightClasses; ++c)
    if (!(m.precision[c].bytes >= 0.0 && m.precision[c].bytes <= 8.0))
      throw Error(source + ": the " + weight_class_name(WeightClass(c)) + " weights' width must be in [0, 8] bytes per " +
                  "weight (0 = the run's dtype; spec field 'expert_weight_bytes' for the routed experts), got " +
                  std::to_string(m.precision[c].bytes));
  if (m.num_heads % m.num_kv_heads != 0)
    throw Error(source + ": num_attention_heads (" + std::to_string(m.num_heads) +
                ") must be a multiple of num_key_value_heads (" + std::to_string(m.num_kv_heads) + ")");
  if (m.dense_layers < 0 || m.dense_layers >= std::max(m.num_layers, 1) || (m.dense_layers > 0 && !m.is_moe()))
    throw Error(source + ": 'first_k_dense_replace' (" + std::to_string(m.dense_layers) +
                ") must leave at least one MoE layer of the " + std::to_string(m.num_layers) + " and needs experts");
  if (m.dense_layers > 0) positive(m.intermediate_size, "intermediate_size (the dense layers' MLP)");
  if (m.is_moe()) {
    positive(m.experts_per_token, "num_experts_per_tok");
    positive(m.expert_intermediate_size, "moe_intermediate_size");
    if (m.experts_per_token > m.num_experts)
      throw Error(source + ": num_experts_per_tok (" + std::to_string(m.experts_per_token) +
                  ") exceeds the number of experts (" + std::to_string(m.num_experts) + ")");
  } else {
    positive(m.intermediate_size, "intermediate_size");
  }
  // Written so that NaN fails too.
  if (!(m.expert_locality >= 0.0 && m.expert_locality <= 1.0))
    throw Error(source + ": 'expert_locality' must be a number in [0, 1] (the probability that a token reuses the "
                "previous token's experts), got " + std::to_string(m.expert_locality));
  if (!(m.expert_load_cv >= 0.0 && m.expert_load_cv <= kMaxExpertLoadCv))
    throw Error(source + ": 'expert_load_cv' must be a number in [0, " + std::to_string(int(kMaxExpertLoadCv)) +
                "] (the coefficient of variation of the experts' shares of the routing, 0 = uniform), got " +
                std::to_string(m.expert_load_cv));
  if (m.expert_load_cv > 0.0 && !m.is_moe())
    throw Error(source + ": 'expert_load_cv' is given but the model has no experts");
  if (m.sliding_window < 0) throw Error(source + ": 'sliding_window' must be >= 0");
  if (m.kv_lora_rank < 0) throw Error(source + ": 'kv_lora_rank' must be >= 0 (0: no multi-head latent attention)");
  if (m.is_mla()) {
    const std::string mla = " (multi-head latent attention, kv_lora_rank " + std::to_string(m.kv_lora_rank) + ")";
    positive(m.qk_nope_head_dim, ("qk_nope_head_dim" + mla).c_str());
    positive(m.qk_rope_head_dim, ("qk_rope_head_dim" + mla).c_str());
    positive(m.v_head_dim, ("v_head_dim" + mla).c_str());
    if (m.q_lora_rank < 0) throw Error(source + ": 'q_lora_rank' must be >= 0 (0 or null: no query compression)");
    for (const auto& [v, field] : {std::pair{m.q_lora_rank, "q_lora_rank"}, {m.kv_lora_rank, "kv_lora_rank"},
                                   {m.qk_nope_head_dim, "qk_nope_head_dim"}, {m.qk_rope_head_dim, "qk_rope_head_dim"},
                                   {m.v_head_dim, "v_head_dim"}})
      at_most(v, 1 << 16, field);
    if (m.sliding_window > 0)
      throw Error(source + ": a sliding window with multi-head latent attention is not priced by the simulator (no "
                  "released model has both); remove 'sliding_window' or give a grouped-query config");
  }
  if (!(m.kv_cache_bytes >= 0.0 && m.kv_cache_bytes <= 4.0))
    throw Error(source + ": the KV cache's width must be in [0, 4] bytes per element, got " +
                std::to_string(m.kv_cache_bytes));
  if (m.sliding_layer_fraction < 0.0 || m.sliding_layer_fraction > 1.0)
    throw Error(source + ": sliding-window layer fraction must be in [0, 1]");
  dtype_bytes(m.dtype);
}

namespace {

// fnmatch over module names as ModelOpt writes its exclusions ('*' any run, '?' one character).
bool glob_match(const char* p, const char* n) {
  for (; *p; ++p, ++n) {
    if (*p == '*') {
      for (const char* k = n;; ++k) {
        if (glob_match(p + 1, k)) return true;
        if (!*k) return false;
      }
    }
    if (!*n || (*p != '?' && *p != *n)) return false;
  }
  return !*n;
}

// A module of the checkpoint the simulator prices: its Hugging Face name, its class and its
// parameter count (norms and other unpriced modules carry 0: a pattern may name them).
struct Module {
  std::string name;
  WeightClass cls;
  double params;
};

// Every linear module of `m` under the names DeepSeek-V3, Llama, Qwen, Mixtral and GPT-OSS
// checkpoints use (one representative routed expert, 0, stands for all of a layer's experts), the
// norms, and `mtp_layers` MTP modules after the last layer (DeepSeek's model.layers.<L>).
std::vector<Module> checkpoint_modules(const ModelShape& m, int mtp_layers) {
  std::vector<Module> out;
  const double H = m.hidden_size;
  out.push_back({"model.embed_tokens", WeightClass::embedding, double(m.vocab_size) * H});
  out.push_back({"lm_head", WeightClass::lm_head, m.tie_word_embeddings ? 0.0 : double(m.vocab_size) * H});
  out.push_back({"model.norm", WeightClass::other, 0});
  for (int i = 0; i < m.num_layers + mtp_layers; ++i) {
    const bool mtp = i >= m.num_layers;
    const std::string l = "model.layers." + std::to_string(i) + ".";
    const auto add = [&](const std::string& n, WeightClass c, double params) {
      out.push_back({l + n, mtp ? WeightClass::mtp : c, params});
    };
    for (const char* n : {"input_layernorm", "post_attention_layernorm", "self_attn.q_a_layernorm", "self_attn.kv_a_layernorm"})
      add(n, WeightClass::other, 0);
    if (mtp)
      for (const char* n : {"enorm", "hnorm", "eh_proj", "shared_head.norm", "shared_head.head"}) add(n, WeightClass::mtp, 0);
    if (m.is_mla()) {
      const double nh = m.num_heads, Dn = m.qk_nope_head_dim, Dr = m.qk_rope_head_dim;
      if (m.q_lora_rank > 0) {
        add("self_attn.q_a_proj", WeightClass::attention, H * m.q_lora_rank);
        add("self_attn.q_b_proj", WeightClass::attention, double(m.q_lora_rank) * nh * (Dn + Dr));
      } else {
        add("self_attn.q_proj", WeightClass::attention, H * nh * (Dn + Dr));
      }
      add("self_attn.kv_a_proj_with_mqa", WeightClass::attention, H * (double(m.kv_lora_rank) + Dr));
      add("self_attn.kv_b_proj", WeightClass::attention, mla_up_projection_params(m));
      add("self_attn.o_proj", WeightClass::attention, nh * m.v_head_dim * H);
    } else {
      add("self_attn.q_proj", WeightClass::attention, H * m.q_dim());
      add("self_attn.k_proj", WeightClass::attention, H * m.kv_dim());
      add("self_attn.v_proj", WeightClass::attention, H * m.kv_dim());
      add("self_attn.o_proj", WeightClass::attention, double(m.q_dim()) * H);
    }
    if (!m.is_moe() || i < m.dense_layers) {
      for (const char* n : {"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
        add(n, WeightClass::dense_mlp, H * m.intermediate_size);
      continue;
    }
    const double E = m.num_experts, Ie = m.expert_intermediate_size, Is = m.shared_expert_intermediate_size;
    for (const char* moe : {"mlp.", "block_sparse_moe."}) {  // Mixtral names its MoE block_sparse_moe
      const std::string b = moe;
      const double share = b == "mlp." ? 1.0 : 0.0;  // priced once, under the first spelling
      add(b + "gate", WeightClass::router, share * H * E);
      for (const char* n : {"gate_proj", "up_proj", "down_proj", "w1", "w2", "w3"})
        add(b + "experts.0." + n, WeightClass::routed_experts,
            share * (n[0] == 'w' ? 0.0 : E * H * Ie));
      for (const char* n : {"gate_up_proj", "down_proj"})  // GPT-OSS: the experts of a layer as one tensor
        add(b + "experts." + n, WeightClass::routed_experts, 0);
    }
    for (const char* n : {"mlp.shared_experts.gate_proj", "mlp.shared_experts.up_proj", "mlp.shared_experts.down_proj",
                          "mlp.shared_expert.gate_proj", "mlp.shared_expert.up_proj", "mlp.shared_expert.down_proj"})
      add(n, WeightClass::shared_experts, std::string(n).find("shared_experts.") != std::string::npos || m.num_experts == 0
                                              ? H * Is : 0.0);
    add("mlp.shared_expert_gate", WeightClass::router, 0);
  }
  return out;
}

// Rewrites a module name's expert index to the representative expert 0 ("...experts.17.w1" ->
// "...experts.0.w1").
std::string representative_expert(const std::string& name) {
  const std::string key = ".experts.";
  const auto at = name.find(key);
  if (at == std::string::npos) return name;
  std::size_t d = at + key.size(), e = d;
  while (e < name.size() && std::isdigit(static_cast<unsigned char>(name[e]))) ++e;
  return e > d ? name.substr(0, d) + "0" + name.substr(e) : name;
}

// A ModelOpt algorithm's storage: ClassPrecision (dtype for the peak, bytes per weight).
ClassPrecision modelopt_precision(const std::string& algo, double group_size, const std::string& where) {
  if (algo == "NVFP4") return {"nvfp4", 0.5 + 1.0 / group_size};  // FP4 values, activations FP4 too (W4A4)
  if (algo == "W4A16_NVFP4") return {"", 0.5 + 1.0 / group_size};  // FP4 weights, 16-bit activations
  if (algo == "FP8" || algo == "FP8_PER_CHANNEL_PER_TOKEN") return {"fp8", 1.0};  // per-tensor or per-channel scales
  if (algo == "FP8_PB_WO") return {"fp8", 1.0 + 4.0 / (128.0 * 128.0)};            // 128 x 128 blocks
  throw Error(where + ": ModelOpt quant_algo '" + algo +
              "' is not priced by the simulator; it reads NVFP4, W4A16_NVFP4, FP8, FP8_PER_CHANNEL_PER_TOKEN, "
              "FP8_PB_WO and MIXED_PRECISION");
}

std::string upper(std::string s) {
  for (auto& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// NVIDIA ModelOpt checkpoints, as vLLM's and SGLang's ModelOpt configs read them: config.json's
// quantization_config {quant_method "modelopt", quant_algo, group_size, ignore | exclude_modules,
// kv_cache_quant_algo | kv_cache_scheme}, or hf_quant_config.json's form with the same fields under
// "quantization"; quant_algo MIXED_PRECISION gives each module's algorithm in quantized_layers
// (a module not listed stays unquantised). Exclusions are fnmatch globs, or substrings, of module
// names. Each class's bytes are its modules' parameter-weighted mean.
void parse_modelopt(const nlohmann::json& q_in, const nlohmann::json& config, ModelShape& m, const std::string& where) {
  const nlohmann::json& q = has_field(q_in, "quantization") && q_in.at("quantization").is_object()
                                ? q_in.at("quantization")
                                : q_in;
  const std::string algo = upper(get_string(q, "quant_algo", where));
  double group = 16;
  if (has_field(q, "group_size") && !q.at("group_size").is_null()) {
    const long long g = get_int(q, "group_size", where);
    if (g < 1 || g > (1 << 16)) throw Error(where + ": 'group_size' must be in [1, 65536], got " + std::to_string(g));
    group = double(g);
  }
  std::vector<std::string> excluded;
  for (const char* key : {"exclude_modules", "ignore"}) {
    if (!has_field(q, key) || q.at(key).is_null()) continue;
    if (!q.at(key).is_array()) throw Error(where + ": '" + key + "' must be a list of module name patterns");
    for (const auto& e : q.at(key)) {
      if (!e.is_string()) throw Error(where + ": '" + key + "' holds " + e.dump() + ", not a module name pattern");
      excluded.push_back(e.get<std::string>());
    }
  }
  // The KV cache: kv_cache_quant_algo (a string or null), or kv_cache_scheme {type float, num_bits 8}.
  if (has_field(q, "kv_cache_quant_algo") && !q.at("kv_cache_quant_algo").is_null()) {
    const std::string kv = upper(get_string(q, "kv_cache_quant_algo", where));
    if (kv == "FP8") m.kv_cache_bytes = 1.0;
    else if (kv == "NVFP4") m.kv_cache_bytes = 0.5 + 1.0 / 16.0;
    else throw Error(where + ": kv_cache_quant_algo '" + kv + "' is not priced by the simulator; it reads FP8 and NVFP4");
  } else if (has_field(q, "kv_cache_scheme") && q.at("kv_cache_scheme").is_object()) {
    const auto& k = q.at("kv_cache_scheme");
    if (get_string_or(k, "type", "", where) != "float" || get_int_or(k, "num_bits", 0, where) != 8)
      throw Error(where + ": kv_cache_scheme " + k.dump() + " is not priced by the simulator; it reads {type float, num_bits 8} (FP8)");
    m.kv_cache_bytes = 1.0;
  }
  const std::string base = m.dtype;  // torch_dtype: what ModelOpt leaves unquantised
  const ClassPrecision unquantised{"", dtype_bytes(base)};
  int mtp_layers = 0;
  if (has_field(config, "num_nextn_predict_layers") && !config.at("num_nextn_predict_layers").is_null())
    mtp_layers = std::clamp(get_int(config, "num_nextn_predict_layers", where), 0, 64);
  const std::vector<Module> modules = checkpoint_modules(m, mtp_layers);

  // Each module's precision: the algorithm, the mixed-precision table's entry, or unquantised.
  std::vector<ClassPrecision> of(modules.size(), algo == "MIXED_PRECISION" ? unquantised : ClassPrecision{});
  if (algo == "MIXED_PRECISION") {
    const nlohmann::json* table = has_field(q, "quantized_layers") ? &q.at("quantized_layers") : nullptr;
    if (!table || !table->is_object() || table->empty())
      throw Error(where + ": quant_algo MIXED_PRECISION needs a non-empty 'quantized_layers' object (module name -> "
                  "{quant_algo})");
    for (const auto& [name, info] : table->items()) {
      if (!info.is_object() || !has_field(info, "quant_algo"))
        throw Error(where + ": quantized_layers['" + name + "'] must be an object with 'quant_algo'");
      const double g = has_field(info, "group_size") ? double(get_int(info, "group_size", where)) : group;
      if (g < 1) throw Error(where + ": quantized_layers['" + name + "'] group_size must be >= 1");
      const ClassPrecision p = modelopt_precision(upper(get_string(info, "quant_algo", where)), g, where);
      const std::string key = representative_expert(name);
      bool found = false;
      for (std::size_t i = 0; i < modules.size(); ++i)
        if (modules[i].name == key || modules[i].name.rfind(key + ".", 0) == 0) {
          of[i] = p;
          found = true;
        }
      if (!found)
        throw Error(where + ": quantized_layers names module '" + name +
                    "', which the simulator cannot map to a weight class (attention, dense MLP, routed or shared "
                    "experts, router, embedding, LM head, MTP module) of this model");
    }
  } else {
    const ClassPrecision p = modelopt_precision(algo, group, where);
    for (std::size_t i = 0; i < modules.size(); ++i) of[i] = p;
    // ModelOpt never quantises the embedding table (vLLM's ModelOpt configs leave it unquantised)
    // nor the norms.
    for (std::size_t i = 0; i < modules.size(); ++i)
      if (modules[i].cls == WeightClass::embedding || modules[i].params == 0) of[i] = unquantised;
  }
  for (const std::string& pattern : excluded) {
    bool found = false;
    for (std::size_t i = 0; i < modules.size(); ++i)
      if (glob_match(pattern.c_str(), modules[i].name.c_str()) || modules[i].name.find(pattern) != std::string::npos) {
        of[i] = unquantised;
        found = true;
      }
    if (!found)
      throw Error(where + ": exclusion pattern '" + pattern +
                  "' matches no module the simulator prices (attention, dense MLP, routed or shared experts, router, "
                  "embedding, LM head, norms, MTP module) of this model, so it cannot be mapped to a weight class");
  }
  // Per class: the parameter-weighted mean bytes; the peak of the quantised dtype when every
  // priced module of the class shares it.
  for (std::size_t c = 0; c < kWeightClasses; ++c) {
    double params = 0, bytes = 0;
    std::string dtype;
    bool same = true, first = true;
    for (std::size_t i = 0; i < modules.size(); ++i) {
      if (std::size_t(modules[i].cls) != c || modules[i].params <= 0) continue;
      params += modules[i].params;
      bytes += modules[i].params * of[i].bytes;
      if (first) dtype = of[i].dtype;
      same = same && of[i].dtype == dtype;
      first = false;
    }
    m.precision[c] = params > 0 ? ClassPrecision{same ? dtype : "", bytes / params} : unquantised;
  }
  m.precision_of(WeightClass::other) = unquantised;
  // The MTP module: priced whole, at the unquantised width when the patterns leave most of its
  // parameters unquantised (model.layers.61*), else with the target's classes (a router gate
  // excluded, say).
  double mtp_params = 0, mtp_unquantised_params = 0;
  for (std::size_t i = 0; i < modules.size(); ++i) {
    if (modules[i].cls != WeightClass::mtp) continue;
    mtp_params += modules[i].params;
    if (of[i].bytes == unquantised.bytes && of[i].dtype == unquantised.dtype) mtp_unquantised_params += modules[i].params;
  }
  const bool mtp_unquantised = mtp_params > 0 && mtp_unquantised_params > 0.5 * mtp_params;
  m.precision_of(WeightClass::mtp) = mtp_unquantised ? unquantised : ClassPrecision{};
  m.quantization = "modelopt";
  bool nvfp4 = false;
  for (const auto& p : of) nvfp4 = nvfp4 || (p.bytes > 0 && p.bytes < 1.0);
  m.dtype = nvfp4 ? "nvfp4" : "fp8";
}

}  // namespace

ModelShape parse_model_shape(const nlohmann::json& j_in, const std::string& source) {
  if (!j_in.is_object()) throw Error(source + ": a model config must be a JSON object");
  // Multimodal configs nest the language model under text_config.
  const nlohmann::json& j = has_field(j_in, "text_config") && !has_field(j_in, "hidden_size")
                                ? j_in.at("text_config")
                                : j_in;
  // Attention kinds the operators do not model: refused, not priced as dense attention.
  if (has_field(j, "index_topk"))
    throw Error(source + ": DeepSeek Sparse Attention (index_topk " + j.at("index_topk").dump() +
                ": DeepSeek-V3.2 / GLM-5 style, a lightning indexer choosing the keys each query attends to) is not "
                "priced by the simulator yet; its operators model dense grouped-query and multi-head latent attention");
  bool linear = has_field(j, "linear_num_value_heads") || has_field(j, "full_attention_interval");
  if (has_field(j, "layer_types") && j.at("layer_types").is_array())
    for (const auto& t : j.at("layer_types"))
      linear = linear || (t.is_string() && t.get<std::string>() == "linear_attention");
  if (linear)
    throw Error(source + ": linear-attention layers (Gated DeltaNet: Qwen3-Next style hybrid attention) are not priced "
                "by the simulator yet; its operators model softmax attention over a KV cache only");
  ModelShape m;
  m.name = get_string_or(j_in, "name", get_string_or(j_in, "_name_or_path", source, source), source);
  m.source = get_string_or(j_in, "source", source, source);
  m.hidden_size = get_int(j, "hidden_size", source);
  m.num_layers = get_int(j, "num_hidden_layers", source);
  m.num_heads = get_int(j, "num_attention_heads", source);
  m.num_kv_heads = get_int_or(j, "num_key_value_heads", m.num_heads, source);
  if (m.num_heads <= 0) throw Error(source + ": 'num_attention_heads' must be > 0");
  m.head_dim = get_int_or(j, "head_dim", m.hidden_size / m.num_heads, source);
  if (has_field(j, "kv_lora_rank")) {
    // Multi-head latent attention: one latent per token for every head (vLLM's MLA cache has one
    // KV head of kv_lora_rank + qk_rope_head_dim); the config's num_key_value_heads and head_dim
    // describe the unabsorbed heads and are not its cache.
    m.kv_lora_rank = get_int(j, "kv_lora_rank", source);
    m.q_lora_rank = get_int_or(j, "q_lora_rank", 0, source);  // null: no query compression
    const std::string mla = source + " (multi-head latent attention)";
    m.qk_nope_head_dim = get_int(j, "qk_nope_head_dim", mla);
    m.qk_rope_head_dim = get_int(j, "qk_rope_head_dim", mla);
    m.v_head_dim = get_int(j, "v_head_dim", mla);
    m.num_kv_heads = 1;
    // In 64 bits: two file values; validate_model_shape bounds each.
    m.head_dim = int(std::min<long long>((long long)m.qk_nope_head_dim + m.qk_rope_head_dim, 1 << 20));
  }
  m.vocab_size = get_int(j, "vocab_size", source);
  m.tie_word_embeddings = get_bool_or(j, "tie_word_embeddings", false, source);
  m.attention_bias = get_bool_or(j, "attention_bias", get_string_or(j, "model_type", "", source) == "qwen2", source);
  m.mlp_bias = get_bool_or(j, "mlp_bias", false, source);

  // Mixture of experts, under the names different families use.
  for (const char* key : {"num_experts", "num_local_experts", "n_routed_experts"})
    if (has_field(j, key)) m.num_experts = get_int(j, key, source);
  for (const char* key : {"num_experts_per_tok", "experts_per_token", "num_experts_per_token"})
    if (has_field(j, key)) m.experts_per_token = get_int(j, key, source);
  m.intermediate_size = get_int_or(j, "intermediate_size", 0, source);
  if (m.num_experts > 0) {
    m.expert_intermediate_size = get_int_or(j, "moe_intermediate_size", m.intermediate_size, source);
    m.shared_expert_intermediate_size = get_int_or(j, "shared_expert_intermediate_size", 0, source);
    // DeepSeek-V3 / GLM-4.5 count shared experts of the routed experts' width instead.
    if (m.shared_expert_intermediate_size == 0 && has_field(j, "n_shared_experts") &&
        !j.at("n_shared_experts").is_null()) {
      // In 64 bits: the product of two file values; validate_model_shape bounds it.
      const long long shared = (long long)get_int(j, "n_shared_experts", source) * m.expert_intermediate_size;
      if (shared < 0 || shared > (1 << 24))
        throw Error(source + ": n_shared_experts x moe_intermediate_size is " + std::to_string(shared) +
                    ", outside [0, " + std::to_string(1 << 24) + "]");
      m.shared_expert_intermediate_size = int(shared);
    }
    if (has_field(j, "first_k_dense_replace")) m.dense_layers = get_int(j, "first_k_dense_replace", source);
  }
  if (m.num_experts > 0 && m.experts_per_token == 0)
    throw Error(source + ": mixture-of-experts config (" + std::to_string(m.num_experts) +
                " experts) lacks 'num_experts_per_tok' (or 'experts_per_token')");

  // Sliding window: Mistral applies it to every layer; GPT-OSS lists layer_types; Qwen2 only
  // when use_sliding_window is true.
  if (has_field(j, "sliding_window") && j.at("sliding_window").is_number()) {
    m.sliding_window = get_int(j, "sliding_window", source);
    m.sliding_layer_fraction = 1.0;
    if (has_field(j, "use_sliding_window") && !get_bool_or(j, "use_sliding_window", false, source)) {
      m.sliding_window = 0;
      m.sliding_layer_fraction = 0.0;
    }
    if (has_field(j, "layer_types") && j.at("layer_types").is_array() && !j.at("layer_types").empty()) {
      int sliding = 0;
      for (const auto& t : j.at("layer_types")) sliding += t.is_string() && t.get<std::string>() == "sliding_attention";
      m.sliding_layer_fraction = double(sliding) / double(j.at("layer_types").size());
    }
  }

  std::string dtype = get_string_or(j, "torch_dtype", get_string_or(j, "dtype", "bfloat16", source), source);
  m.dtype = normalize_dtype(dtype, source + " (torch_dtype)");
  if (has_field(j, "quantization_config") && j.at("quantization_config").is_object()) {
    const nlohmann::json& q = j.at("quantization_config");
    const std::string where = source + " (quantization_config)";
    const std::string method = get_string_or(q, "quant_method", "", where);
    if (method == "mxfp4" && m.is_moe()) m.precision_of(WeightClass::routed_experts) = {"", dtype_bytes("mxfp4")};
    if (method == "fp8") {
      // FP8 linear layers (DeepSeek-V3/R1: e4m3, 128 × 128 blocks, one fp32 scale each); the
      // embedding and LM head stay 16-bit.
      m.quantization = "fp8";
      m.dtype = "fp8";
      double scale = 0;
      if (has_field(q, "weight_block_size")) {
        const auto& b = q.at("weight_block_size");
        if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer() ||
            b[0].get<long long>() < 1 || b[1].get<long long>() < 1 || b[0].get<long long>() > (1 << 16) ||
            b[1].get<long long>() > (1 << 16))
          throw Error(where + ": 'weight_block_size' must be two positive integers [rows, cols] of at most 65536, got " +
                      b.dump());
        scale = 4.0 / (double(b[0].get<long long>()) * double(b[1].get<long long>()));
      }
      for (auto& c : m.precision) c = {"fp8", 1.0 + scale};
      m.precision_of(WeightClass::embedding) = m.precision_of(WeightClass::lm_head) = {"", 2.0};
      m.precision_of(WeightClass::mtp) = {};
    }
    if (method.rfind("modelopt", 0) == 0) parse_modelopt(q, j, m, where);
  }
  if (has_field(j_in, "expert_weight_bytes"))
    m.precision_of(WeightClass::routed_experts) = {"", get_number(j_in, "expert_weight_bytes", source)};
  if (has_field(j_in, "expert_locality")) m.expert_locality = get_number(j_in, "expert_locality", source);
  if (has_field(j_in, "expert_load_cv")) {
    m.expert_load_cv = get_number(j_in, "expert_load_cv", source);
    // A fitted parameter states where it was fitted.
    if (!has_field(j_in, "expert_load_source") || !j_in.at("expert_load_source").is_string())
      throw Error(source + ": 'expert_load_cv' needs 'expert_load_source' (a string: the routing statistics it was "
                  "fitted to)");
  }
  validate_model_shape(m, source);
  return m;
}

ModelShape load_model_shape(const std::filesystem::path& path) {
  return parse_model_shape(read_json_file(path, "model spec"), path.filename().string());
}

ModelShape model_shape_from_config(const ModelConfig& c, const std::string& name) {
  ModelShape m;
  m.name = name;
  m.source = name;
  m.hidden_size = c.hidden_size;
  m.intermediate_size = c.intermediate_size;
  m.num_layers = c.num_hidden_layers;
  m.num_heads = c.num_attention_heads;
  m.num_kv_heads = c.num_key_value_heads;
  m.head_dim = c.head_dim;
  m.vocab_size = c.vocab_size;
  m.tie_word_embeddings = c.tie_word_embeddings;
  m.attention_bias = c.attention_bias;
  m.mlp_bias = c.mlp_bias;
  m.sliding_window = c.sliding_window;
  m.sliding_layer_fraction = c.sliding_window > 0 ? 1.0 : 0.0;
  m.dtype = normalize_dtype(c.torch_dtype, name);
  validate_model_shape(m, name);
  return m;
}

}  // namespace specdec::sim
