#pragma once
// The shape of a decoder-only transformer as the cost model needs it: sizes, attention layout
// (grouped-query or multi-head latent attention), vocabulary, mixture-of-experts structure and
// storage precision. Read from any Hugging Face config.json (dense Llama-family, Mistral, Qwen2/3,
// Qwen3-MoE, GPT-OSS, DeepSeek-V2/V3/R1, ...) or from a model spec file in simulator/specs/models/
// (a config.json plus "name" and "source").
#include <array>
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "reference/model/model_config.hpp"

namespace specdec::sim {

// Within-sequence routing locality of a mixture-of-experts target when its spec gives none: 0,
// independent routing. Routing analyses (the Mixtral paper's among them) report consecutive tokens
// repeating experts more often than chance, but no figure for the bundled targets was found that
// could be checked; a spec sets its own from a measurement of the model's routing.
inline constexpr double kDefaultExpertLocality = 0.0;

// The classes of weights a checkpoint may store at different precisions (ModelOpt's exclusion
// patterns, MXFP4 experts, FP8 linear layers with a 16-bit embedding and LM head). `other`: every
// linear layer outside the classes (norms, a drafter head's own layers).
enum class WeightClass : unsigned char {
  other,
  attention,       // q/k/v/o projections (multi-head latent attention's too)
  dense_mlp,       // a dense layer's gate/up/down
  routed_experts,  // a MoE layer's routed experts
  shared_experts,  // a MoE layer's shared experts
  router,          // a MoE layer's gate (router)
  embedding,
  lm_head,
  mtp,             // every weight of an MTP module stored with the checkpoint (0 bytes: the target's classes)
  count
};
inline constexpr std::size_t kWeightClasses = std::size_t(WeightClass::count);
const char* weight_class_name(WeightClass c);

// How a checkpoint stores one class: `dtype` names the format (its peak prices the class's
// matrix products where the hardware has one: nvfp4 at fp4, fp8 at fp8; "" = the run's) and
// `bytes` the bytes per weight, scales included (0 = the run's dtype).
struct ClassPrecision {
  std::string dtype;
  double bytes = 0;
};

struct ModelShape {
  std::string name;
  std::string source;
  int hidden_size = 0;         // H
  int intermediate_size = 0;   // I (dense MLP)
  int num_layers = 0;          // L
  int num_heads = 0;           // nh
  int num_kv_heads = 0;        // nkv (multi-head latent attention: 1, the shared latent)
  int head_dim = 0;            // hd (multi-head latent attention: qk_nope_head_dim + qk_rope_head_dim)
  int vocab_size = 0;          // V
  bool tie_word_embeddings = false;
  bool attention_bias = false;
  bool mlp_bias = false;
  // Mixture of experts (num_experts == 0: dense).
  int num_experts = 0;
  int experts_per_token = 0;
  int expert_intermediate_size = 0;         // per expert
  int shared_expert_intermediate_size = 0;  // always-active shared expert, 0 = none
                                            // (config: shared_expert_intermediate_size, or
                                            // n_shared_experts × moe_intermediate_size)
  // The first `dense_layers` layers of a MoE model use a dense MLP of intermediate_size instead
  // (config first_k_dense_replace: DeepSeek-V3 3, GLM-4.5 3); the rest are MoE.
  int dense_layers = 0;
  // Spec field "expert_locality", in [0, 1]: the probability that a token of a sequence takes the
  // previous token's experts instead of routing afresh (0 = independent, uniform routing).
  double expert_locality = kDefaultExpertLocality;
  // Spec field "expert_load_cv", in [0, kMaxExpertLoadCv]: how unevenly the workload's tokens spread
  // over a layer's experts (simulator/expert_popularity.hpp; 0 = uniform). Fitted per model to
  // published routing statistics; "expert_load_source" says which.
  double expert_load_cv = 0.0;
  // Attention window: sliding_window tokens on a fraction of the layers (0 = full attention).
  int sliding_window = 0;
  double sliding_layer_fraction = 0.0;
  std::string dtype = "bf16";  // storage dtype of weights (bf16, fp16, fp32, fp8, nvfp4)
  // A quantised checkpoint's precision per weight class (weight_bytes_of applies it while the run
  // keeps `dtype`). quant_method "fp8" (DeepSeek-V3/R1): every linear layer fp8 with one fp32 scale
  // per weight_block_size block [r, c] (4 / (r·c) bytes per weight more), embedding and LM head
  // 16-bit. "mxfp4" (GPT-OSS): the routed experts. "modelopt" (NVIDIA ModelOpt, quant_algo NVFP4,
  // FP8 or MIXED_PRECISION): every linear layer its exclusion patterns or quantized_layers leave
  // quantised, the rest at torch_dtype. The spec field "expert_weight_bytes" sets the routed experts.
  std::array<ClassPrecision, kWeightClasses> precision{};
  std::string quantization;  // the quant_method read ("" = none)
  // KV-cache element width from the checkpoint (kv_cache_quant_algo FP8: 1); 0 = the activations'.
  double kv_cache_bytes = 0;
  const ClassPrecision& precision_of(WeightClass c) const { return precision[std::size_t(c)]; }
  ClassPrecision& precision_of(WeightClass c) { return precision[std::size_t(c)]; }
  // Multi-head latent attention (config kv_lora_rank > 0: DeepSeek-V2/V3/R1), the config's names.
  // A token's keys and values are one latent of kv_lora_rank plus a RoPE key of qk_rope_head_dim,
  // shared by every head (the KV cache); each head's query/key is qk_nope_head_dim +
  // qk_rope_head_dim wide and its value v_head_dim. simulator/mla.hpp prices it.
  int q_lora_rank = 0;       // 0: the query is projected from the input directly (DeepSeek-V2-Lite)
  int kv_lora_rank = 0;      // 0: grouped-query attention
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;

  bool is_moe() const { return num_experts > 0; }
  bool is_mla() const { return kv_lora_rank > 0; }
  int moe_layers() const { return is_moe() ? num_layers - dense_layers : 0; }
  // The shape of its dense layers (dense_layers > 0): the same model with a dense MLP.
  ModelShape dense_layer_shape() const;
  int q_dim() const { return num_heads * head_dim; }
  int kv_dim() const { return num_kv_heads * head_dim; }
  // Parameter counts (embedding and LM head included; tied embeddings counted once).
  double attention_params_per_layer() const;
  double mlp_params_per_layer_total() const;   // all experts
  double mlp_params_per_layer_active() const;  // experts_per_token experts + shared + router
  double total_params() const;
  double active_params() const;  // read per token at batch 1 (embedding row excluded)
  double embedding_params() const;  // embedding and LM head (one matrix when tied)
  // KV-cache elements one token adds to one layer on one device at tensor-parallel degree `tp`:
  // K and V of the device's KV heads (split while tp <= nkv, one per device beyond), or multi-head
  // latent attention's one latent of kv_lora_rank + qk_rope_head_dim, replicated on every device.
  double kv_elements_per_token_per_layer(int tp) const;
  // KV-cache bytes for one token of context (all layers, one device without tensor parallelism),
  // at `kv_bytes` per element.
  double kv_bytes_per_token(double kv_bytes) const;
};

// Bytes per weight element of a run that stores `m` at `dtype`: its linear layers' (with the block
// scales when the run keeps a quantised checkpoint's own dtype) and its embedding and LM head's
// (16-bit in a quantised checkpoint, as DeepSeek-V3's FP8 checkpoint keeps them).
// Bytes per weight of each class (the MTP class 0: the module takes the target's classes).
struct WeightBytes {
  std::array<double, kWeightClasses> bytes{2, 2, 2, 2, 2, 2, 2, 2, 0};
  double operator[](WeightClass c) const { return bytes[std::size_t(c)]; }
  double& operator[](WeightClass c) { return bytes[std::size_t(c)]; }
  // Every class at `c`'s bytes (a drafter head's own layers; an MTP module stored apart).
  WeightBytes uniform(WeightClass c) const;
};
// The run keeps the checkpoint's own precision per class when `dtype` is the model's dtype; any
// other dtype prices a copy with every weight at that dtype (--dtype bf16: dequantised).
WeightBytes weight_bytes_of(const ModelShape& m, const std::string& dtype);
// The dtype whose peak prices each class's matrix products in such a run ("" = the run's own).
std::array<std::string, kWeightClasses> weight_compute_dtypes(const ModelShape& m, const std::string& dtype);
// Bytes of every weight of `m` (embedding, layers, norms, LM head; its MTP modules excluded) at `w`.
double total_weight_bytes(const ModelShape& m, const WeightBytes& w);

// Parses a Hugging Face config.json object (extra fields "name" and "source" are used when
// present). `source` names the file in error messages. Attention the cost model does not price is
// refused by name rather than priced as something else: DeepSeek Sparse Attention (index_topk:
// DeepSeek-V3.2, GLM-5) and linear-attention layers (Qwen3-Next's Gated DeltaNet).
ModelShape parse_model_shape(const nlohmann::json& j, const std::string& source);
ModelShape load_model_shape(const std::filesystem::path& path);
// From the reference's parsed config (dense Llama family).
ModelShape model_shape_from_config(const ModelConfig& c, const std::string& name);
// Validates sizes and divisibility; throws specdec::Error naming the field.
void validate_model_shape(const ModelShape& m, const std::string& source);

// Bytes per element of a dtype name (fp32 4, bf16/fp16 2, fp8/int8 1, nvfp4 0.5625, mxfp4 0.53125);
// throws otherwise.
double dtype_bytes(const std::string& dtype);
// Normalises torch dtype names ("bfloat16" -> "bf16", "float32" -> "fp32", ...); throws if unknown.
std::string normalize_dtype(const std::string& dtype, const std::string& source);

}  // namespace specdec::sim
