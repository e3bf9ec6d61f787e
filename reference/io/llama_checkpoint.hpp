#pragma once
// Llama-family checkpoints in the Hugging Face layout: config.json plus model.safetensors, or
// shards model-0000k-of-0000N.safetensors listed by model.safetensors.index.json. Standard tensor
// names (model.embed_tokens.weight, model.layers.{i}.self_attn.q_proj.weight, ..., lm_head.weight).
#include <array>
#include <cstddef>
#include <filesystem>
#include <string>

#include "reference/io/fingerprint.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/model_config.hpp"
#include "reference/model/weights.hpp"

namespace specdec {

class CheckpointReader;

struct LlamaModel {
  ModelConfig config;
  LlamaWeights weights;
};

// Reads config.json and every tensor the config calls for, converted to fp32 whatever the stored
// dtype. `path` is the checkpoint directory, or a .safetensors / index file in it, or a GGUF file
// (gguf_checkpoint.hpp: config from its metadata, weights dequantized). Tensor names may carry the "model." prefix (ForCausalLM) or not (bare LlamaModel).
// A tied model ignores a stored lm_head.weight; an untied one without it is an error. Tensors the
// config does not call for are ignored, as Hugging Face does. Errors name the tensor, the file or
// directory, and the expected and actual shapes.
LlamaModel load_llama_checkpoint(const std::filesystem::path& path);
// The names of layer `layer`'s seven matrices, in layer_matrices' order (q, k, v, o, gate, up, down).
std::array<std::string, 7> layer_matrix_names(int layer);
// Layer `layer`'s tensors alone, shapes checked; without `with_matrices` only its norms and biases
// are read (for loaders that convert the matrices themselves, a chunk of rows at a time).
LayerWeights load_layer_weights(const CheckpointReader& reader, int layer, bool with_matrices = true);
// The config alone, as load_llama_checkpoint reads it (config.json and generation_config.json, or
// a GGUF file's metadata), without touching the weights.
ModelConfig load_checkpoint_config(const std::filesystem::path& path);

// Writes config.json (torch_dtype set to match `dtype`) and the weights as F32, F16 or BF16 into
// `dir` (created if missing). max_shard_bytes = 0 writes one model.safetensors; otherwise tensors
// go, in checkpoint order, into shards of at most max_shard_bytes each (a larger tensor gets a
// shard of its own) plus the index, or into model.safetensors if they all fit in one. Every file is
// written atomically; a new directory appears only once complete. Weight files of an earlier save
// in another layout are removed so they cannot shadow the new ones. Throws if the weights do not
// match the config.
void save_llama_checkpoint(const std::filesystem::path& dir, const ModelConfig& config,
                           const LlamaWeights& weights, Dtype dtype, std::size_t max_shard_bytes = 0);

// Throws if `weights` does not have the shapes `config` calls for (or carries tensors it does not,
// such as biases the config has none of). `source` names the model in the message.
void check_checkpoint_weights(const ModelConfig& config, const LlamaWeights& weights, const std::string& source);

// "fnv1a64:<16 hex>": FNV-1a 64 over every tensor in declaration order (embed_tokens; per layer
// the LayerWeights members in declaration order; norm; lm_head), each hashed as its dimensions
// (u64 little-endian: rows and cols of a matrix, size of a vector) followed by its fp32 bytes in
// row-major order. Empty tensors contribute only their zero dimensions.
std::string weights_fingerprint(const LlamaWeights& weights);
// The same fingerprint streamed from a checkpoint, a chunk of rows at a time: the weights
// load_llama_checkpoint would give, without holding them.
std::string weights_fingerprint(const CheckpointReader& reader);
// Feeds one layer's tensors, in declaration order, to a fingerprint (shared with drafter heads).
void hash_layer_weights(Fnv1a64& h, const LayerWeights& layer);

}  // namespace specdec
