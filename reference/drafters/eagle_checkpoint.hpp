#pragma once
// EAGLE-1, EAGLE-3 and P-EAGLE head checkpoints in every layout of FORMATS.md: SafeAILab
// (fc, layers.0.* / midlayer.*, norm, lm_head, d2t, t2d), vllm-project speculators (layers.0.*,
// embed_tokens, mask_hidden [1, 1, n]) and AWS P-EAGLE (midlayer.* + layers.{1..}.*, mask_hidden
// [1, n], ptd_token_id). config.json + model.safetensors, or shards with an index.
#include <filesystem>

#include <nlohmann/json.hpp>

#include "reference/drafters/eagle_head.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/transformer.hpp"

namespace specdec {

// Reads a head checkpoint directory (config.json + model.safetensors or shards) of any layout in
// FORMATS.md, detecting kind and layout from config.json and the tensor names (an MTP checkpoint:
// its module 0, mtp_checkpoint.hpp). Aux layers default
// to the target's {2, L/2, L−3}. Errors name the file, tensor or field and what was expected.
EagleHead load_eagle_head(const std::filesystem::path& dir, const TargetTensors& target);

// Writes config.json and model.safetensors (floats as F32, F16 or BF16; d2t I64, t2d BOOL) in the
// head's layout into `dir` (created if missing), each file atomically; load_eagle_head reads it
// back to the same head (exactly for F32).
void save_eagle_head(const std::filesystem::path& dir, const EagleHead& head, Dtype dtype);

// A drafter checkpoint's config.json. Throws specdec::Error naming the file when it cannot be
// read or is not JSON.
nlohmann::json read_drafter_config(const std::filesystem::path& path);

// "fnv1a64:…" over every weight of the head in a fixed order (the target's shared tensors are
// not included), for trace metadata.
std::string eagle_head_fingerprint(const EagleHead& head);

}  // namespace specdec
