#pragma once
// Shape and options of an EAGLE-1, EAGLE-3 or P-EAGLE drafter head or of one MTP module, and the
// config.json of each checkpoint layout (FORMATS.md): SafeAILab EAGLE-1 / EAGLE-3, vllm-project
// speculators ("eagle3", "peagle") and AWS P-EAGLE; MTP modules' layouts are read and written by
// mtp_checkpoint.hpp.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/model/model_config.hpp"

namespace specdec {

// mtp: one multi-token-prediction module (DeepSeek-V3 and the models that copied it): an EAGLE-1
// head with RMSNorms on both inputs, a standard decoder layer and the final norm before the LM head.
enum class EagleKind { eagle1, eagle3, peagle, mtp };

// "eagle1" | "eagle3" | "peagle" | "mtp"
std::string eagle_kind_name(EagleKind kind);

struct EagleHeadConfig {
  EagleKind kind = EagleKind::eagle3;
  // "safeailab" | "speculators" | "aws" (P-EAGLE); MTP: "deepseek" | "qwen3_next" | "mimo" |
  // "speculators". What was loaded / will be saved.
  std::string layout = "safeailab";
  // Shape of the drafter's decoder layers (H, nh, nkv, hd, I, eps, rope). num_hidden_layers must
  // equal num_layers and vocab_size must equal target_vocab.
  ModelConfig layer;
  int num_layers = 1;          // EAGLE-1/3: usually 1; P-EAGLE: N
  int target_hidden = 0;       // Ht
  int target_vocab = 0;        // V
  int draft_vocab = 0;         // Vd (= V when there is no d2t)
  // EAGLE-3 / P-EAGLE: Hugging Face hidden-state indices of the target fused by fc, ascending
  // (0 = embeddings, i = the state entering layer i). EAGLE-1: empty (its feature is the target's
  // last hidden state after the final norm).
  std::vector<int> aux_layers;
  bool fc_bias = false;               // EAGLE-1 default true
  bool norm_before_residual = false;  // the residual is hidden_norm(h) instead of h
  bool own_embeddings = false;        // the checkpoint carries embed_tokens.weight [V, H]
  int mask_token_id = -1;             // P-EAGLE: the token of the parallel (mask) slots
  int trained_depth = 0;              // P-EAGLE: parallel depths it was trained for (0 = unknown)
  // MTP only. x = fc(concat[enorm(embed), hnorm(h)]), or [hnorm(h); enorm(embed)] when
  // hidden_first (MiMo); own_lm_head: the module stores its own output head (DeepSeek-V3's
  // shared_head.head), else the target's is used. module: this module's index j among
  // num_modules; target_layers: the target's L (DeepSeek-V3 stores module j as model.layers.{L+j}).
  bool hidden_first = false;
  bool own_lm_head = false;
  int module = 0;
  int num_modules = 1;
  int target_layers = 0;

  // Features per unprojected row: EAGLE-1 and MTP Ht (the embedding is added internally), else n_aux·Ht.
  int feature_width() const;
  // Input width of fc: EAGLE-1 and MTP H + Ht, else n_aux·Ht.
  int fc_in() const;
  // EAGLE-1 and MTP read the target's final hidden state; the others its aux states.
  bool reads_final_hidden() const { return kind == EagleKind::eagle1 || kind == EagleKind::mtp; }
  int hidden() const { return layer.hidden_size; }

  bool operator==(const EagleHeadConfig&) const = default;
};

// EAGLE-3's default fused layers for a target with `target_layers` layers: {2, L/2, L−3} in
// ascending order. Throws if the target is too shallow for three distinct indices.
std::vector<int> default_aux_layers(int target_layers);

// Internal consistency of a head config (sizes, kind/layout combination, aux layers ascending,
// mask token for P-EAGLE). `source` names the file or caller in the message.
void validate_eagle_config(const EagleHeadConfig& c, const std::string& source);

// Consistency with the target the head drafts for: vocabulary, hidden sizes, aux layer indices
// within [0, L], mask token inside the vocabulary.
void check_eagle_config_against_target(const EagleHeadConfig& c, const ModelConfig& target,
                                       const std::string& source);

// Parses a head's config.json. The kind and layout come from the config and, for the flat
// SafeAILab / AWS configs, from the checkpoint's tensor names (sorted). aux_layers stay empty
// when the file does not list them (the loader fills in the target's default).
EagleHeadConfig parse_eagle_config(const nlohmann::json& j, const std::vector<std::string>& tensor_names,
                                   const std::string& source);

// The config.json object of `c.layout`. `target_layers` decides whether aux layers equal the
// default (and may then be omitted from a flat config); `target_architecture` fills the
// speculators verifier entry.
nlohmann::json eagle_config_to_json(const EagleHeadConfig& c, int target_layers,
                                    const std::string& target_architecture);

}  // namespace specdec
