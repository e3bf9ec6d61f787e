#pragma once
// What a drafter head shares with its target: the target's config, its token embeddings and its
// LM head (fp32, [V, H] each; the LM head is the embeddings when tied). Made from the target
// Transformer, or from those tensors alone: a run whose target computes on another backend loads
// just them, not the whole fp32 model. A view: what it points to must outlive it.
#include "reference/core/tensor.hpp"
#include "reference/model/model_config.hpp"
#include "reference/model/transformer.hpp"

namespace specdec {

class TargetTensors {
 public:
  // A Transformer is its own shared tensors (implicit, so a head binds to a target as before).
  TargetTensors(const Transformer& target)  // NOLINT(google-explicit-constructor)
      : config_(&target.config()), embed_(&target.weights().embed_tokens), head_(&target.weights().output_head()) {}
  TargetTensors(const ModelConfig& config, const Matrix& embed_tokens, const Matrix& output_head)
      : config_(&config), embed_(&embed_tokens), head_(&output_head) {}

  const ModelConfig& config() const { return *config_; }
  const Matrix& embed_tokens() const { return *embed_; }  // [V, H]
  const Matrix& output_head() const { return *head_; }    // [V, H]
  // Views of the same tensors (the same target), not equal values.
  bool operator==(const TargetTensors& other) const = default;

 private:
  const ModelConfig* config_;
  const Matrix* embed_;
  const Matrix* head_;
};

}  // namespace specdec
