#pragma once
// Targets and drafters for the speculative-decoding tests. A drafter that never agrees with its
// target would make every exactness test trivially pass (everything rejected), so the fixtures
// include drafters that agree often but not always: a perturbed copy of the target, and the
// target itself (everything accepted).
#include <functional>
#include <memory>
#include <string>

#include "reference/drafting/draft_model_proposer.hpp"
#include "model_fixtures.hpp"

namespace specdec::testing {

// The target's weights plus Gaussian noise of the given size (same config).
inline Transformer perturbed_copy(const Transformer& target, float noise, uint64_t seed) {
  LlamaWeights w = target.weights();
  const LlamaWeights n = random_llama_weights(target.config(), seed, noise);
  auto add = [](Matrix& a, const Matrix& b) { if (a.size() && a.size() == b.size()) a += b; };
  add(w.embed_tokens, n.embed_tokens);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    add(w.layers[l].q_proj, n.layers[l].q_proj);
    add(w.layers[l].k_proj, n.layers[l].k_proj);
    add(w.layers[l].v_proj, n.layers[l].v_proj);
    add(w.layers[l].o_proj, n.layers[l].o_proj);
    add(w.layers[l].gate_proj, n.layers[l].gate_proj);
    add(w.layers[l].down_proj, n.layers[l].down_proj);
  }
  add(w.lm_head, n.lm_head);
  return Transformer(target.config(), w);
}

struct MethodFixture {
  std::string name;
  // Builds a proposer drafting K tokens for `target` (which outlives it).
  std::function<std::unique_ptr<Proposer>(const Transformer& target, int k)> make;
};

// Keeps drafter models alive for the duration of a test.
struct DrafterPool {
  std::vector<std::unique_ptr<Transformer>> models;
  const Transformer& add(Transformer t) {
    models.push_back(std::make_unique<Transformer>(std::move(t)));
    return *models.back();
  }
};

inline std::vector<MethodFixture> draft_model_fixtures(DrafterPool& pool) {
  return {
      {"draft_self",
       [&pool](const Transformer& target, int k) -> std::unique_ptr<Proposer> {
         return std::make_unique<DraftModelProposer>(pool.add(Transformer(target.config(), target.weights())), target.config(), k, 256);
       }},
      {"draft_perturbed",
       [&pool](const Transformer& target, int k) -> std::unique_ptr<Proposer> {
         return std::make_unique<DraftModelProposer>(pool.add(perturbed_copy(target, 0.03f, 999)), target.config(), k, 256);
       }},
      {"draft_independent",
       [&pool](const Transformer& target, int k) -> std::unique_ptr<Proposer> {
         ModelConfig small = target.config();
         small.num_hidden_layers = 1;
         small.intermediate_size = 32;
         return std::make_unique<DraftModelProposer>(pool.add(make_model(small, 4242)), target.config(), k, 256);
       }},
  };
}

}  // namespace specdec::testing
