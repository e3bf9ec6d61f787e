#pragma once
// A Llama-family model from a GGUF file (llama.cpp's format): the config from the metadata, and
// the names and row order of its tensors (checkpoint_reader.hpp reads them, dequantized to float32
// by ggml_dequantize.hpp). Architectures llama (which covers
// Mistral's files), mistral, qwen2 and qwen3. llama.cpp's converter interleaves the two RoPE halves
// of each head's q and k rows for llama-arch files (the GPT-J layout its kernel uses); loading
// undoes that, so the weights are the Hugging Face checkpoint's, row for row.
//
// GGUF tensor names and their Hugging Face counterparts:
//   token_embd.weight -> model.embed_tokens.weight   output_norm.weight -> model.norm.weight
//   output.weight -> lm_head.weight (absent: tied embeddings)
//   blk.{i}.attn_norm / attn_q / attn_k / attn_v / attn_output / attn_q_norm / attn_k_norm /
//   ffn_norm / ffn_gate / ffn_up / ffn_down -> model.layers.{i}.input_layernorm / self_attn.q_proj /
//   ... / post_attention_layernorm / mlp.gate_proj / mlp.up_proj / mlp.down_proj (.weight, .bias)
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "reference/io/gguf.hpp"

namespace specdec {

// The config.json Hugging Face would have for this file's model (architectures, sizes, RoPE,
// special tokens, torch_dtype from the stored weight type); parse_model_config reads it. Throws,
// naming the file and the key, for an architecture or setting specdec does not run.
nlohmann::json gguf_hf_config(const GgufFile& file);

// The GGUF name of a Hugging Face tensor name ("model.layers.3.mlp.up_proj.weight" ->
// "blk.3.ffn_up.weight"); "" for a name with no GGUF counterpart.
std::string gguf_tensor_name(const std::string& hf_name);
// Whether the file's q/k rows are in llama.cpp's interleaved RoPE order (llama and mistral files).
bool gguf_interleaved_rope(const GgufFile& file);
// The converter's permutation undone: Hugging Face row `row` of a q or k tensor (heads of
// `head_dim` rows) is the file's row head·hd + 2i + j, for row = head·hd + j·hd/2 + i.
int64_t gguf_rope_source_row(int64_t row, int64_t head_dim);

}  // namespace specdec
