#pragma once
// Multi-token-prediction (MTP) modules as checkpoints carry them, each layout read unchanged
// (REFERENCES.md, "MTP"; tensor names in eagle_tensors.hpp, mtp_names):
//   deepseek     DeepSeek-V3 / GLM-4.5: the target's config.json with num_nextn_predict_layers n;
//                module j at model.layers.{L + j}.{enorm, hnorm, eh_proj, shared_head.norm,
//                [shared_head.head], [embed_tokens]} + its decoder layer. Often inside the target's
//                own checkpoint (--drafter = --model).
//   qwen3_next   Qwen3-Next: mtp.{pre_fc_norm_embedding, pre_fc_norm_hidden, fc, layers.{l}, norm},
//                one module of mtp_num_hidden_layers layers.
//   mimo         MiMo: model.mtp_layers.{j}.{token_layernorm, hidden_layernorm, input_proj,
//                final_layernorm} + layer; input_proj reads [hidden; embedding].
//   speculators  the vllm-project speculators library's "mtp" speculator: a config with
//                speculators_model_type "mtp" and transformer_layer_config; mtp_layers.{j}.{as MiMo}
//                reading [embedding; hidden]; the verifier's embeddings and LM head are not stored.
// A module is an EagleHead of kind mtp whose decoder layers have the target's shape. A module whose
// layer needs what specdec does not implement (mixture-of-experts MLPs, multi-head latent
// attention, linear attention) is refused naming the tensor and the feature.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/drafters/eagle_head.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/transformer.hpp"

namespace specdec {

// Whether a checkpoint with this config.json and these tensor names holds MTP modules.
bool is_mtp_checkpoint(const nlohmann::json& config, const std::vector<std::string>& tensor_names);

// What a checkpoint's config.json and tensor names say about its MTP modules (no target needed):
// for `specdec inspect`. layout empty when it holds none.
struct MtpCheckpointInfo {
  std::string layout;       // deepseek | qwen3_next | mimo | speculators
  int modules = 0;          // modules found
  int layers = 1;           // decoder layers per module (Qwen3-Next: mtp_num_hidden_layers)
  bool own_lm_head = false;  // module 0 stores its own output head
  bool own_embeddings = false;
  std::vector<std::string> tensors;  // the modules' tensor names
};
MtpCheckpointInfo describe_mtp_checkpoint(const nlohmann::json& config, const std::vector<std::string>& tensor_names);

// Every module of the MTP checkpoint at `path` (a directory, a .safetensors file or a shard
// index), module j at index j, bound to `target` (which must outlive them). Errors name the file,
// the tensor or field and what was expected.
std::vector<EagleHead> load_mtp_modules(const std::filesystem::path& path, const TargetTensors& target);

// Writes config.json and model.safetensors of `modules` (modules 0..n−1 of one checkpoint, one
// layout) into `dir`, each file atomically; load_mtp_modules reads them back (exactly for F32).
void save_mtp_modules(const std::filesystem::path& dir, const std::vector<EagleHead>& modules, Dtype dtype);

// The config.json object of an MTP checkpoint of `c.layout` with c.num_modules modules.
nlohmann::json mtp_config_to_json(const EagleHeadConfig& c, const std::string& target_architecture);

}  // namespace specdec
