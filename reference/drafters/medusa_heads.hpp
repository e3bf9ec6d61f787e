#pragma once
// Medusa heads (Cai et al. 2024; REFERENCES.md, FORMATS.md): K heads on the target's last hidden
// state after its final norm (what EAGLE-1 reads), each drafting one token offset in parallel.
//
//   head k (0-based): x_0 = h;  x_{l+1} = x_l + SiLU(W_{k,l} x_l + b_{k,l}),  l < L
//                     logits_k = logit_scale · (lm_head_k x_L)          (no bias)
//
// Head k at the hidden state of position i (whose target output is token t_{i+1}) predicts
// t_{i+k+2}: with i = committed − 1 it drafts depth k + 1 after the pending token. Drafts never
// depend on earlier drafts, so one forward of all K heads drafts a whole step; there is no KV
// cache. The arithmetic is the reference's exact ops (ops::linear's dot order, exact::silu), so
// every engine computes the same bits.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/core/tensor.hpp"
#include "reference/model/model_config.hpp"

namespace specdec {

// The checkpoint layout a set of heads was read from or is written in (FORMATS.md).
enum class MedusaLayout {
  medusa,  // FasterDecoding/Medusa: medusa_lm_head.safetensors, {k}.{l}.linear.{weight,bias}, {k}.{L}.weight
  vllm,    // vLLM models/medusa.py: model_type "medusa", blocks.{k}.layers.{l}.{weight,bias}, lm_heads.{k}.weight
};
// "medusa" | "vllm"
std::string medusa_layout_name(MedusaLayout layout);
// Inverse of medusa_layout_name; throws specdec::Error listing the accepted names.
MedusaLayout parse_medusa_layout(const std::string& name);

// Bounds on what a config may ask for (published heads: K = 3..5, L = 1).
inline constexpr int kMaxMedusaHeads = 64;   // = kMaxDraftDepth: one head per draft depth
inline constexpr int kMaxMedusaLayers = 64;  // residual blocks per head

struct MedusaConfig {
  MedusaLayout layout = MedusaLayout::medusa;
  int num_heads = 4;    // K (FasterDecoding medusa_num_heads, vLLM num_heads)
  int num_layers = 1;   // L residual blocks per head (medusa_num_layers, vLLM num_hidden_layers); 0 allowed
  int hidden = 0;       // H, the target's hidden size
  int vocab = 0;        // V, the target's vocabulary
  bool fc_bias = true;  // the blocks' linears have a bias (FasterDecoding always; vLLM medusa_fc_bias)
  // vLLM original_lm_head: one projection shared by every head (stored once, as lm_heads.0).
  bool shared_lm_head = false;
  float logit_scale = 1.0f;  // vLLM logit_scale: logits are multiplied by it (finite, > 0)
  std::string base_model;    // base_model_name_or_path (informational; not checked)
};

// Throws specdec::Error naming `source` and the field when a value is out of range (K outside
// [1, kMaxMedusaHeads], L outside [0, kMaxMedusaLayers], H or V < 1, a non-finite or
// non-positive logit_scale, or a FasterDecoding layout with what it cannot hold: no bias, a shared
// head, a logit scale).
void validate_medusa_config(const MedusaConfig& c, const std::string& source);
// Throws unless the heads' hidden size and vocabulary are the target's.
void check_medusa_config_against_target(const MedusaConfig& c, const ModelConfig& target, const std::string& source);

// fp32 weights; linear weights [out, in].
struct MedusaBlock {
  Matrix weight;  // [H, H]
  Vector bias;    // [H], or empty when !fc_bias
};
struct MedusaWeights {
  std::vector<std::vector<MedusaBlock>> blocks;  // [K][L]
  std::vector<Matrix> lm_heads;                  // K of [V, H]; one when shared_lm_head
};

// Throws unless `w` has exactly the tensors `c` calls for, with their shapes; `source` names the
// checkpoint and the messages name the tensor in c's layout.
void check_medusa_weights(const MedusaConfig& c, const MedusaWeights& w, const std::string& source);

// One float tensor of a checkpoint: its name in c's layout, where it lives in MedusaWeights, its
// shape ([rows, cols] for a matrix, [rows] for a vector).
struct MedusaTensor {
  std::string name;
  Matrix* m = nullptr;  // exactly one of m, v is set
  Vector* v = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
};
// Weights with the lists sized for `c` (K × L blocks; K projections, or one when shared) and every
// tensor empty: what medusa_tensors points into when loading or drawing weights.
MedusaWeights sized_medusa_weights(const MedusaConfig& c);
// The tensors `c` calls for, in one fixed order (head by head: each block's weight then bias, then
// the head's projection; a shared projection once, last). `w` must be sized for c
// (sized_medusa_weights); only addresses are taken.
std::vector<MedusaTensor> medusa_tensors(const MedusaConfig& c, MedusaWeights& w);

class MedusaHeadsEngine;

class MedusaHeads {
 public:
  // Validates the config, the weights and the config against the target (hidden size, vocabulary).
  MedusaHeads(MedusaConfig config, MedusaWeights weights, const ModelConfig& target,
              const std::string& source = "medusa heads");

  // hidden: (R, H) rows of the target's final hidden state. Returns `heads` matrices (the first
  // `heads` heads; 0 = all K), logits[k]: (R, V). Batch-invariant: R rows give bitwise what R
  // one-row calls give. Checks the input, then computes on the engine (the reference when none).
  std::vector<Matrix> forward(const Matrix& hidden, int heads = 0) const;

  // These heads computing on `engine` (null: the reference); config and weights shared, not copied.
  MedusaHeads with_engine(std::shared_ptr<const MedusaHeadsEngine> engine) const;
  // The engine the forwards run on; null for the reference.
  const MedusaHeadsEngine* engine() const { return engine_.get(); }

  // Hands the fp32 weights to an engine that keeps its own copy of them (cpu_medusa_heads): returns
  // them (moved when no other copy of these heads shares them, else copied) and keeps only the
  // biases. These heads and their copies then compute on an engine alone; the reference's forward,
  // saving and the fingerprint throw.
  MedusaWeights release_weights();
  // Whether release_weights gave the matrices away.
  bool weights_released() const { return weights_released_; }
  // Throws specdec::Error naming `what` (what needed them) once release_weights gave them away.
  void require_weights(const std::string& what) const;

  const MedusaConfig& config() const { return config_; }
  // The fp32 weights; only the biases once weights_released().
  const MedusaWeights& weights() const { return *weights_; }
  int num_heads() const { return config_.num_heads; }
  // The projection head k uses: [V, H] (the shared one under shared_lm_head).
  const Matrix& lm_head(int k) const;

  // The reference's forward of already checked input (engines that fall back to it call this).
  std::vector<Matrix> reference_forward(const Matrix& hidden, int heads) const;

 private:
  MedusaConfig config_;
  // Immutable once checked, shared by with_engine; release_weights moves it out when these heads
  // are its only owner.
  std::shared_ptr<MedusaWeights> weights_;
  std::shared_ptr<const MedusaHeadsEngine> engine_;  // null: the reference
  bool weights_released_ = false;
};

// Another implementation of MedusaHeads::forward (optimized/cpu/cpu_medusa_heads.hpp): it gets
// input MedusaHeads::forward has checked ((R, H), 1 <= heads <= K) and must compute what the
// reference computes (bitwise for the cpu backend).
class MedusaHeadsEngine {
 public:
  virtual ~MedusaHeadsEngine() = default;
  // The backend's name ("cpu"), for messages.
  virtual std::string name() const = 0;
  virtual std::vector<Matrix> forward(const Matrix& hidden, int heads) const = 0;
};

// A config for `target` (its hidden size and vocabulary) with K heads of L blocks in `layout`
// (FasterDecoding: with biases; vLLM: without, its default).
MedusaConfig medusa_config_for(const ModelConfig& target, int num_heads, int num_layers = 1,
                               MedusaLayout layout = MedusaLayout::medusa);

// Deterministic random heads: every weight and bias ~ N(0, stddev²) from NormalSource(seed), drawn
// in checkpoint order (head by head: its blocks' weight then bias, then its projection; a shared
// projection once, after every block).
MedusaHeads random_medusa_heads(const MedusaConfig& config, const ModelConfig& target, uint64_t seed, float stddev);

}  // namespace specdec
