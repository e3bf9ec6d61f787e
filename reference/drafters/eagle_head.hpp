#pragma once
// EAGLE-1, EAGLE-3 and P-EAGLE drafter heads and MTP modules in the reference: weights,
// validation and the forward pass over the drafter's own KV cache (REFERENCES.md, FORMATS.md).
//
//   EAGLE-1: x = fc(cat(embed(token), feature)) (+ bias) -> decoder layer without input norm
//            (attn_in = residual = x) -> [layers 1.. standard] -> the target's LM head, no norm.
//   EAGLE-3: h = fc(aux) unless the row is projected; attn_in = cat(input_norm(embed(token)),
//            hidden_norm(h)) (2H), residual = h (or hidden_norm(h)) -> attention, MLP ->
//            [layers 1.. standard] -> lm_head(norm(out)) over the draft vocabulary.
//   P-EAGLE: EAGLE-3's forward with N layers; mask slots carry the mask token and mask_hidden.
//   MTP:     x = fc(cat(embed_norm(embed(token)), hidden_norm(feature))) (MiMo: hidden first, no
//            bias) -> standard decoder layers (with input norms) -> lm_head(norm(out)), lm_head the
//            module's own or the target's; the feature is the target's final hidden state.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reference/core/tensor.hpp"
#include "reference/drafters/eagle_config.hpp"
#include "reference/drafters/target_tensors.hpp"
#include "reference/model/attention_mask.hpp"
#include "reference/model/decoder_layer.hpp"
#include "reference/model/kv_cache.hpp"
#include "reference/model/rope.hpp"
#include "reference/model/transformer.hpp"
#include "reference/model/weights.hpp"

namespace specdec {

// fp32 weights of a head; linear weights [out, in].
struct EagleWeights {
  Matrix fc;                  // [H, fc_in]
  Vector fc_bias;             // [H] or empty
  Vector hidden_norm;         // [H] EAGLE-3 / P-EAGLE layer 0, MTP hnorm; empty for EAGLE-1
  Vector embed_norm;          // [H] MTP enorm; empty for the others
  // num_layers layers. Layer 0: EAGLE-1 has no input_layernorm; EAGLE-3 / P-EAGLE q/k/v_proj are
  // [.., 2H]. Layers 1.. are standard Llama layers.
  std::vector<LayerWeights> layers;
  Vector norm;                // [H]; empty for EAGLE-1
  Matrix lm_head;             // [Vd, H]; empty for EAGLE-1 and an MTP module without its own (the target's is used)
  Matrix embed_tokens;        // [V, H] when config.own_embeddings, else empty (the target's)
  std::vector<int64_t> d2t;   // [Vd] target id = d + d2t[d]; empty = identity
  std::vector<uint8_t> t2d;   // [V] 1 where the target id is in the draft vocabulary; empty = all
  Vector mask_hidden;         // [n_aux·Ht] P-EAGLE; empty otherwise
};

// Throws unless `w` has exactly the tensors `c` calls for, with their shapes, and d2t / t2d form a
// consistent injective mapping into [0, V). `source` names the checkpoint in the message.
void check_eagle_weights(const EagleHeadConfig& c, const EagleWeights& w, const std::string& source);

class EagleHeadEngine;

class EagleHead {
 public:
  // features: (T, F). A row goes through fc when `projected[t]` is false; F is then
  // config().feature_width() (EAGLE-1: the target's final hidden state, Ht; EAGLE-1 builds
  // cat(embed(token), feature) itself; EAGLE-3 / P-EAGLE: the n_aux·Ht aux states). A projected
  // row (EAGLE-3 / P-EAGLE feeding its own output back) is already an H-wide hidden state in
  // columns [0, H) and skips fc; when every row is projected F may be H. P-EAGLE mask slots are
  // token = mask_token_id with features = mask_hidden() (projected = false).
  struct Input {
    std::vector<int32_t> tokens;        // (T)
    Matrix features;                    // (T, F)
    std::vector<uint8_t> projected;     // (T); empty = none projected
    std::vector<int32_t> positions;     // (T); empty = cache length + t
    std::optional<AttentionMask> mask;  // (T, C + T); absent = causal
    std::vector<int> logit_rows;        // rows whose logits are returned, in this order
    // MTP as vLLM runs it: rows at position 0 take a zero embedding (vLLM's deepseek_mtp.py).
    bool zero_embedding_at_position_0 = false;

    bool is_projected(int t) const { return !projected.empty() && projected[static_cast<std::size_t>(t)] != 0; }
  };
  struct Output {
    Matrix logits;  // (R, Vd): over the DRAFT vocabulary (EAGLE-1: Vd = V)
    Matrix hidden;  // (T, H): the last layer's output before the final norm (what EAGLE feeds back)
  };

  // Validates the config, the weights and both against the target. The head keeps a pointer to
  // the target (embeddings, EAGLE-1's LM head): the target must outlive the head.
  EagleHead(EagleHeadConfig config, EagleWeights weights, const TargetTensors& target,
            const std::string& source = "eagle head");

  // Appends the T rows to `cache` (from new_cache) and runs the head. Batch-invariant: T rows
  // give bitwise the same results as T one-row calls. Checks `in` against the head, then computes
  // on the engine (the reference's own code when none is bound).
  Output forward(KVCache& cache, const Input& in) const;
  // One sequence of a batched head forward: its own cache and input.
  struct BatchEntry {
    KVCache* cache = nullptr;
    const Input* input = nullptr;
  };
  // Several sequences in one call: out[i] is bitwise forward(*batch[i].cache, *batch[i].input),
  // whatever the other entries. Every input is checked before any cache is touched; caches must be
  // distinct. The engine may read each weight once for all rows of all entries.
  std::vector<Output> forward_batch(const std::vector<BatchEntry>& batch) const;
  // A cache of the engine's kind with num_layers layers of the drafter's KV width (reference:
  // a DenseKVCache).
  std::unique_ptr<KVCache> new_cache(int capacity) const;

  // This head computing on `engine` (null: the reference): the config, the weights (shared, not
  // copied) and the target stay the same.
  EagleHead with_engine(std::shared_ptr<const EagleHeadEngine> engine) const;
  // The engine the forwards run on; null for the reference.
  const EagleHeadEngine* engine() const { return engine_.get(); }

  // Hands the fp32 weights to an engine that keeps its own copy of them (cpu_eagle_head): returns
  // them (moved when no other copy of this head shares them, else copied) and keeps only the
  // vectors (norms, biases, d2t, t2d, mask_hidden). This head and its copies then compute on an
  // engine alone; the reference's forward, saving and the fingerprint throw.
  EagleWeights release_weights();
  // Whether release_weights gave the fp32 matrices away.
  bool weights_released() const { return weights_released_; }
  // Throws specdec::Error naming `what` (what needed them) once release_weights gave them away.
  void require_weights(const std::string& what) const;

  const EagleHeadConfig& config() const { return config_; }
  // The fp32 weights; only the vectors once weights_released().
  const EagleWeights& weights() const { return *weights_; }
  const TargetTensors& target() const { return target_; }
  const Rope& rope() const { return rope_; }
  // The embedding table in use: the head's own, else the target's. [V, H]
  const Matrix& embeddings() const;
  // The output head in use: EAGLE-1 (and an MTP module without its own) the target's LM head
  // [V, H], else lm_head [Vd, H].
  const Matrix& output_head() const;
  // Whether output_head() is the target's.
  bool shares_target_head() const;

  // Target token id of draft id d: d + d2t[d] (identity without d2t). Throws outside [0, Vd).
  int32_t to_target(int32_t draft_id) const;
  // Whether a target id is in the draft vocabulary (t2d). Throws outside [0, V).
  bool in_draft_vocab(int32_t target_id) const;
  // P-EAGLE: the learned hidden state (n_aux·Ht) of the mask slots; empty for other kinds.
  const Vector& mask_hidden() const { return weights_->mask_hidden; }

 private:
  // Throws specdec::Error unless `in` suits this head (the checks of forward).
  void check_input(const Input& in) const;
  // The reference's forward on a DenseKVCache; `in` already checked.
  Output reference_forward(KVCache& cache, const Input& in) const;

  EagleHeadConfig config_;
  // Immutable once checked, shared by with_engine; release_weights moves it out when this head is
  // its only owner.
  std::shared_ptr<EagleWeights> weights_;
  TargetTensors target_;
  Rope rope_;
  std::shared_ptr<const EagleHeadEngine> engine_;  // null: the reference
  bool weights_released_ = false;
};

// Another implementation of EagleHead's forward (optimized/cpu/cpu_eagle_head.hpp): it receives
// inputs EagleHead::forward has checked and must compute what the reference computes (bitwise
// for the cpu backend), on caches from its own new_cache.
class EagleHeadEngine {
 public:
  virtual ~EagleHeadEngine() = default;
  // The backend's name ("cpu"), for messages.
  virtual std::string name() const = 0;
  virtual std::unique_ptr<KVCache> new_cache(int capacity) const = 0;
  // As EagleHead::forward; throws specdec::Error when `cache` is not one of this engine's.
  virtual EagleHead::Output forward(KVCache& cache, const EagleHead::Input& in) const = 0;
  // As EagleHead::forward_batch (inputs checked, caches distinct). This default runs the entries
  // one by one; an engine may read each weight once for all of them.
  virtual std::vector<EagleHead::Output> forward_batch(const std::vector<EagleHead::BatchEntry>& batch) const;
};

// For engines: throws unless a cache of `layers` layers of width `kv_dim` fits head config `c`.
void check_head_cache(const EagleHeadConfig& c, int layers, int kv_dim);
// The positions, RoPE angles and mask of a head forward's rows on a cache holding `first_slot`
// entries (make_token_block; a causal mask goes into `mask_storage` when `in` has none).
TokenBlock head_token_block(const EagleHead::Input& in, const Rope& rope, int first_slot,
                            std::optional<AttentionMask>& mask_storage);

// Deterministic random weights: linear weights, embeddings and mask_hidden ~ N(0, stddev²), norm
// weights 1 + N(0, 0.1²), from std::mt19937_64(seed) by Box-Muller. Empty aux_layers of an
// EAGLE-3 / P-EAGLE config get the target's default. When draft_vocab < target_vocab, d2t maps the
// draft ids to a seeded random ascending subset of the target vocabulary.
EagleHead random_eagle_head(EagleHeadConfig config, const TargetTensors& target, uint64_t seed, float stddev);

}  // namespace specdec
