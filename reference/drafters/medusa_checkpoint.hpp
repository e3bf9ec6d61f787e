#pragma once
// Medusa head checkpoints in the two layouts of FORMATS.md, read and written unchanged:
//
//   medusa  FasterDecoding/Medusa: config.json {medusa_num_heads, medusa_num_layers,
//           base_model_name_or_path[, hidden_size, vocab_size]}; medusa_lm_head.safetensors (or
//           model.safetensors) holding the medusa_head ModuleList's state dict:
//           {k}.{l}.linear.weight [H, H], {k}.{l}.linear.bias [H] (l < L), {k}.{L}.weight [V, H];
//           the same names prefixed "medusa_head." are accepted. A pickled medusa_lm_head.pt is
//           refused with the command that converts it.
//   vllm    vLLM models/medusa.py + transformers_utils/configs/medusa.py: config.json
//           {model_type "medusa", num_heads, num_hidden_layers, hidden_size, vocab_size,
//           truncated_vocab_size, medusa_fc_bias, original_lm_head, logit_scale} (vLLM's defaults
//           where absent: 5 heads, 1 layer, H 4096, V 32001, no bias, no shared head, scale 1;
//           medusa_num_heads / medusa_num_layers name the counts too, as vLLM renames them);
//           model.safetensors: blocks.{k}.layers.{l}.weight [H, H] (+ .bias when medusa_fc_bias),
//           lm_heads.{k}.weight [V, H], one shared lm_heads.0.weight (or lm_head.weight) when
//           original_lm_head; names prefixed "medusa_heads." are accepted, as vLLM strips it.
//           A truncated vocabulary (truncated_vocab_size < vocab_size, token_map) is refused.
//
// config.json decides the layout: model_type "medusa" is vLLM's, anything else FasterDecoding's.
// Every tensor the config calls for must be present with its shape and nothing else may be.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/drafters/medusa_heads.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/model_config.hpp"

namespace specdec {

// Whether `path` (a directory, or a weight file in one) looks like Medusa heads, without reading
// weights: it holds medusa_lm_head.safetensors or medusa_lm_head.pt, or its config.json has
// model_type "medusa" or medusa_num_heads.
bool is_medusa_checkpoint(const std::filesystem::path& path);

// A checkpoint's config and tensor list, without the weights (specdec inspect).
struct MedusaCheckpointInfo {
  MedusaConfig config;                // hidden / vocab from the first projection's shape where config.json has none
  std::filesystem::path weights;      // the safetensors file (or the directory of a sharded one)
  std::vector<std::string> tensors;   // stored names, sorted
};
// Throws specdec::Error naming the file and field (a pickle-only checkpoint is refused here too).
MedusaCheckpointInfo read_medusa_checkpoint(const std::filesystem::path& path);

// Reads Medusa heads for a target of config `target`: the config is checked against it (hidden
// size, vocabulary) before any tensor, then every tensor's presence and shape; unexpected tensors
// are refused. Errors name the file, the tensor or field and what was expected.
MedusaHeads load_medusa_heads(const std::filesystem::path& path, const ModelConfig& target);

// Writes config.json and the weights (medusa: medusa_lm_head.safetensors; vllm: model.safetensors;
// floats as F32, F16 or BF16) in `layout` into `dir` (created if missing), each file atomically,
// removing a weight file of the other layout left there; load_medusa_heads reads it back to the
// same heads (exactly for F32). Throws when the layout cannot hold the heads (FasterDecoding's
// has block biases, one projection per head and no logit scale).
void save_medusa_heads(const MedusaHeads& heads, const std::filesystem::path& dir, MedusaLayout layout,
                       Dtype dtype = Dtype::F32);

// config.json of `c` in c.layout.
nlohmann::json medusa_config_to_json(const MedusaConfig& c);

// "fnv1a64:…" over the heads' shape options and every weight in a fixed order, the same in both
// layouts (for trace metadata).
std::string medusa_heads_fingerprint(const MedusaHeads& heads);

}  // namespace specdec
