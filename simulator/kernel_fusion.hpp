#pragma once
// How an engine splits a decoder layer into kernels (its fusions), as far as the cost model needs:
// the operators (simulator/operators.hpp) add or drop kernels by it, and every kernel an operator
// launches takes at least the hardware's per-kernel floor (simulator/cost_model.hpp). Read from the
// engine spec's "kernels": {"fusion": {...}}; the defaults are the operator list the simulator
// priced before engines described their fusions (one kernel per operator), so an engine that
// gives none is priced as before.
#include <nlohmann/json.hpp>
#include <string>

namespace specdec::sim {

struct KernelFusion {
  // The residual add runs inside the next RMSNorm (vLLM's and SGLang's fused_add_rms_norm,
  // TensorRT-LLM's fused kernels): no `residual_add` kernel of its own.
  bool add_norm = false;
  // Under tensor parallelism the all-reduce, the residual add and the next RMSNorm (and an
  // activation quantisation) are one kernel (TensorRT-LLM's fused one-shot all-reduce, its DeepSeek
  // blog's modules 9 and 13): `post_attention_norm` and the next layer's `input_norm` run inside
  // the collectives.
  bool allreduce_norm = false;
  // MLA's two RMSNorms over q_c and kv_c run as one grouped kernel (TensorRT-LLM's GroupedRMSNorm,
  // blog module 2) instead of two.
  bool grouped_mla_norms = false;
  // Kernels after the router GEMM that turn its logits into each token's top-k experts and weights
  // (0: not priced, as before; a fused routing kernel: 1; routing written as framework ops: more).
  double moe_routing_kernels = 0;
  // Kernels of the routed experts' grouped products: FC1 (gate/up), the activation, FC2 (down) and
  // the engine's token permutation and weighted reduction, where they are kernels of their own
  // (1: the one operator as before).
  double moe_expert_kernels = 1;
  // Kernels of MLA's decode attention (split-KV attention plus the combine of the splits: 2).
  double mla_attention_kernels = 1;
  // MLA's new latent and RoPE key are written into the cache by a kernel of their own (vLLM's
  // concat_and_cache_mla, SGLang's set_kv_buffer) rather than inside the RoPE kernel.
  bool mla_cache_write_kernel = false;
  // A per-token-group FP8 quantisation kernel of the activations before every matrix product over
  // block-scaled FP8 weights (SGLang's and vLLM's per_token_group_quant_fp8), and before the
  // routed experts' two products.
  bool fp8_activation_quant = false;
  bool operator==(const KernelFusion&) const = default;
};

// Parses an engine spec's kernels.fusion object; throws naming `where` and the field.
KernelFusion parse_kernel_fusion(const nlohmann::json& j, const std::string& where);
nlohmann::json kernel_fusion_to_json(const KernelFusion& f);

}  // namespace specdec::sim
