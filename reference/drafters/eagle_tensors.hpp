#pragma once
// The float tensors of a head checkpoint: names in the head's layout, where each lives in
// EagleWeights, and its shape. One list drives shape checks, loading, saving and random init, so
// they cannot disagree. d2t and t2d (integer tensors) are handled by their users directly.
#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/tensor.hpp"
#include "reference/drafters/eagle_config.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "reference/io/safetensors.hpp"

namespace specdec {

struct EagleTensor {
  std::string name;
  Matrix* m = nullptr;  // exactly one of m, v is set
  Vector* v = nullptr;
  int64_t rows = 0;     // in memory: [rows, cols] for a matrix, [rows] for a vector
  int64_t cols = 0;
  std::vector<int64_t> stored_shape;  // on disk (mask_hidden carries leading 1-dimensions)
  bool is_norm = false;               // an RMSNorm weight (random init around 1)

  std::vector<int64_t> shape() const { return m ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows}; }
  std::vector<int64_t> actual_shape() const {
    return m ? std::vector<int64_t>{m->rows(), m->cols()} : std::vector<int64_t>{v->size()};
  }
};

// The tensors `c` calls for, in checkpoint order. w.layers must have c.num_layers entries. Only
// addresses are taken; nothing is modified.
std::vector<EagleTensor> eagle_tensors(const EagleHeadConfig& c, EagleWeights& w);

// Every float member of `w` with its checkpoint name in c's layout, whether called for or not
// (to find tensors a config has no place for).
std::vector<EagleTensor> all_eagle_members(const EagleHeadConfig& c, EagleWeights& w);

// The same head (config, target) with every float tensor rounded to `precision` (F32, BF16 or F16;
// reference/model/precision.hpp), as a head checkpoint stored in that precision holds them. F32
// returns `head` itself, sharing its weights.
EagleHead round_head(const EagleHead& head, Dtype precision);

// "midlayer." (SafeAILab EAGLE-3, AWS P-EAGLE) or "layers.0." (EAGLE-1, speculators); an MTP
// module's layer prefix in its layout.
std::string eagle_layer_prefix(const EagleHeadConfig& c, int layer);

// The tensor names of MTP module c.module in c.layout:
//   deepseek    model.layers.{L+j}.{enorm, hnorm, eh_proj, shared_head.norm, shared_head.head, embed_tokens} + layer
//   qwen3_next  mtp.{pre_fc_norm_embedding, pre_fc_norm_hidden, fc, norm}, layers mtp.layers.{l}.
//   mimo        model.mtp_layers.{j}.{token_layernorm, hidden_layernorm, input_proj, final_layernorm} + layer
//   speculators mtp_layers.{j}.{...as MiMo}
struct MtpNames {
  std::string prefix;  // every tensor of the module starts with it
  std::string layers;  // "mtp.layers." when the module has numbered layers; empty: its one layer sits at prefix
  std::string embed_norm, hidden_norm, fc, norm, lm_head, embed_tokens;
  std::string layer_prefix(int layer) const;
};
MtpNames mtp_names(const EagleHeadConfig& c);

}  // namespace specdec
