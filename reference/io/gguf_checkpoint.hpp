#pragma once
// A Llama-family model from a GGUF file (llama.cpp's format): the config from the metadata, the
// weights dequantized to float32 (see ggml_dequantize.hpp). Architectures llama (which covers
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
#include <filesystem>
#include <nlohmann/json.hpp>

#include "reference/io/gguf.hpp"
#include "reference/io/llama_checkpoint.hpp"

namespace specdec {

// The config.json Hugging Face would have for this file's model (architectures, sizes, RoPE,
// special tokens, torch_dtype from the stored weight type); parse_model_config reads it. Throws,
// naming the file and the key, for an architecture or setting specdec does not run.
nlohmann::json gguf_hf_config(const GgufFile& file);

// The model in `file`, every tensor dequantized once straight into its fp32 matrix.
LlamaModel load_gguf_checkpoint(const std::filesystem::path& file);

}  // namespace specdec
