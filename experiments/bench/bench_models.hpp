#pragma once
// The models a benchmark runs: the target on every backend measured, a draft LM (also on every
// backend), the EAGLE-family heads and Medusa heads, from a checkpoint directory or from a
// random-weight preset. Heads are bound to the reference target (its embeddings and LM head) and
// compute on each backend measured (bind_head, bind_medusa).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "reference/drafters/medusa_heads.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/transformer.hpp"

namespace specdec::bench {

struct BenchModels {
  std::string description;  // "preset llama-1b, random weights (seed 0)" | "checkpoint DIR"
  std::string precision;    // weights as the backends hold them: F32 | BF16 | F16
  std::unique_ptr<Transformer> target;                             // the reference
  std::map<std::string, std::unique_ptr<LanguageModel>> backends;  // other backends of the target
  std::unique_ptr<Transformer> draft_lm;                           // null unless "draft" is run
  std::map<std::string, std::unique_ptr<LanguageModel>> draft_backends;
  std::map<std::string, std::unique_ptr<EagleHead>> heads;         // by method: eagle, eagle3, peagle
  std::map<std::pair<std::string, std::string>, std::unique_ptr<EagleHead>> backend_heads;  // (backend, method)
  std::map<std::string, std::unique_ptr<MedusaHeads>> medusa;      // by method: medusa
  std::map<std::pair<std::string, std::string>, std::unique_ptr<MedusaHeads>> backend_medusa;  // (backend, method)
  std::map<std::string, std::string> drafter_sources;              // by method: directory or "random"

  const LanguageModel& target_on(const std::string& backend) const;
  const LanguageModel* draft_lm_on(const std::string& backend) const;
  // The head of `method` computing on `backend`; null when the method has none.
  const EagleHead* head_for(const std::string& method, const std::string& backend) const;
  // The Medusa heads of `method` computing on `backend`; null when the method has none.
  const MedusaHeads* medusa_for(const std::string& method, const std::string& backend) const;
};

// Drafter checkpoints for a model directory, by method name; a method without one gets a random
// drafter.
using DrafterDirs = std::map<std::string, std::string>;

// A random-weight preset (reference/model/presets) with `precision` weights: BF16 / F16 are
// rounded first, so the reference computes with exactly the weights a narrower backend stores.
// Random drafters (draft_lm_config, random_head_config) for the methods listed.
BenchModels preset_models(const std::string& preset, Dtype precision, const std::vector<std::string>& backends,
                          const std::vector<std::string>& methods, uint64_t seed);

// A checkpoint directory; each backend keeps the stored precision. Drafters from `dirs`, random
// ones where a method has none.
BenchModels directory_models(const std::string& dir, const std::vector<std::string>& backends,
                             const std::vector<std::string>& methods, const DrafterDirs& dirs, uint64_t seed);

}  // namespace specdec::bench
