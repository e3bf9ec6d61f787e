#pragma once
// Multi-head latent attention (DeepSeek-V2 report, arXiv 2405.04434, section 2.1; DeepSeek-V2/V3/R1):
// its parameters and the operators of one layer's attention, in the two forms engines run (vLLM's
// MLA backends, vllm/v1/attention/backends/mla/common.py; SGLang's DeepSeek attention dispatch).
//
// Names (the config's): H hidden, nh heads (per device under tensor parallelism), Q q_lora_rank,
// Dl kv_lora_rank, Dn qk_nope_head_dim, Dr qk_rope_head_dim, Dv v_head_dim.
//
// Decode, verification and drafting use the absorbed form: W_UK is applied to the query and W_UV
// to the output, so attention runs over the latent cache itself, one shared key/value per token
// (MQA-like: the cache is read once per sequence for all heads). A prompt's prefill uses the
// unabsorbed form: every key's latent is up-projected (kv_b_proj) and attention is ordinary
// multi-head attention (SGLang does so for every prefill without speculation; vLLM for every
// request of more than its decode threshold, 128 tokens with FlashMLA, which prices a shorter
// prompt slightly differently from vLLM).
//
// Tensor parallelism splits the heads (q_b_proj, the absorbed products, kv_b_proj and o_proj are
// column/row-parallel); the down-projections (vLLM's fused_qkv_a_proj, disable_tp) and the latent
// cache are replicated on every device, as vLLM runs it without data-parallel attention.
#include <vector>

#include "simulator/model_shape.hpp"
#include "simulator/operators.hpp"

namespace specdec::sim {

// Parameters of one layer's attention: q_a_proj (H·Q) + q_a_layernorm (Q) + q_b_proj
// (Q·nh·(Dn + Dr)), or q_proj (H·nh·(Dn + Dr)) without query compression; kv_a_proj_with_mqa
// (H·(Dl + Dr)) + kv_a_layernorm (Dl) + kv_b_proj (Dl·nh·(Dn + Dv)); o_proj (nh·Dv·H). All heads.
double mla_attention_params(const ModelShape& m);
// kv_b_proj's parameters (W_UK and W_UV, Dl·nh·(Dn + Dv), all heads): vLLM keeps a 16-bit copy of
// them for the absorbed products when the checkpoint is quantised.
double mla_up_projection_params(const ModelShape& m);

// The attention of `layers` MLA layers of `m` over input width `in` (H; 2H for an EAGLE-3 head),
// from the down-projections to the heads' outputs (nh · Dv per row, o_proj excluded): the absorbed
// form, or the unabsorbed one when p.prefill.
void append_mla_attention(std::vector<Operator>& ops, const ModelShape& m, double layers, double in,
                          const ForwardParams& p, const char* phase);

}  // namespace specdec::sim
