#pragma once
// What a drafter head shares with its target: the target's config, its token embeddings and its
// LM head (fp32, [V, H] each; the LM head is the embeddings when tied). Made from the target
// Transformer, from those tensors alone (a run whose target computes on another backend loads
// just them, not the whole fp32 model), or from the config alone: the tensors then stay with the
// backend that computes the target, and only that backend's head engine can read them
// (cpu_eagle_head with the CpuTransformer). A view: what it points to must outlive it.
#include "reference/core/error.hpp"
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
  // The config alone: embed_tokens() and output_head() throw.
  explicit TargetTensors(const ModelConfig& config) : config_(&config), embed_(nullptr), head_(nullptr) {}

  const ModelConfig& config() const { return *config_; }
  // Whether the fp32 tensors are here (not with the target's backend alone).
  bool has_tensors() const { return embed_ != nullptr; }
  const Matrix& embed_tokens() const { return *checked(embed_, "embeddings are"); }  // [V, H]
  const Matrix& output_head() const { return *checked(head_, "LM head is"); }       // [V, H]
  // Views of the same tensors (the same target), not equal values.
  bool operator==(const TargetTensors& other) const = default;

 private:
  static const Matrix* checked(const Matrix* m, const char* what) {
    if (!m) {
      throw Error(std::string("the target's fp32 ") + what +
                  " not loaded here: the backend computing the target holds it, and a head bound to that "
                  "backend computes on its engine alone");
    }
    return m;
  }

  const ModelConfig* config_;
  const Matrix* embed_;
  const Matrix* head_;
};

}  // namespace specdec
