#pragma once
// Heads and inputs the backend head tests share (cpu_eagle_head, cuda_eagle_head): the random
// heads of eagle_head_cases.hpp over tiny_llama's target with every tensor rounded to a stored
// precision, and the inputs of one drafting sequence that exercise every path of a head forward.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reference/drafters/eagle_tensors.hpp"
#include "tests/drafters/eagle_head_cases.hpp"
#include "tests/optimized/cpu_fixtures.hpp"

namespace specdec::testing {

// tiny_llama's target with its matrices rounded to `p`: EAGLE-1 heads use its LM head, which the
// backend heads then hold in two bytes per weight for BF16 and F16.
inline const Transformer& target_in(Dtype p) {
  static std::map<Dtype, std::unique_ptr<Transformer>> targets;
  auto& t = targets[p];
  if (!t) t = std::make_unique<Transformer>(tiny_llama(), cpu::rounded_llama_weights(target().weights(), p));
  return *t;
}

// The random head of case `k` for target_in(p), every tensor rounded to `p`.
inline EagleHead rounded_head(const Case& k, Dtype p) {
  return round_head(random_eagle_head(k.config, target_in(p), k.seed, 0.08f), p);
}

// The inputs of one drafting sequence: a 3-row prefix (MTP: position 0's embedding zeroed); 6 rows, three of them projected (EAGLE-3 /
// P-EAGLE); a 4-node tree at explicit positions with logits for two rows in reverse order; for
// P-EAGLE a real slot followed by three mask slots.
inline std::vector<EagleHead::Input> drafting_inputs(const EagleHead& head, uint64_t seed) {
  const EagleHeadConfig& c = head.config();
  const bool eagle1 = c.reads_final_hidden();  // EAGLE-1 and MTP: no projected rows
  std::vector<EagleHead::Input> steps;
  steps.push_back(random_input(head, 3, seed));
  // MTP as vLLM runs it: the prefix's row at position 0 has no embedding.
  if (c.kind == EagleKind::mtp) steps.back().zero_embedding_at_position_0 = true;
  steps.push_back(random_input(head, 6, seed + 1, eagle1 ? std::vector<int>{} : std::vector<int>{1, 4, 5}));
  EagleHead::Input tree = random_input(head, 4, seed + 2);
  tree.positions = {9, 10, 10, 11};
  tree.mask = AttentionMask::causal(9, 4);
  tree.mask->set(2, 9 + 1, false);  // siblings at position 10 do not see each other
  tree.mask->set(3, 9 + 2, false);  // the grandchild sees its parent (row 1) only
  tree.logit_rows = {3, 0};
  steps.push_back(tree);
  if (c.kind == EagleKind::peagle) {
    EagleHead::Input slots = random_input(head, 4, seed + 3);
    for (int t = 1; t < 4; ++t) {
      slots.tokens[static_cast<std::size_t>(t)] = c.mask_token_id;
      slots.features.row(t) = head.mask_hidden().transpose();
    }
    steps.push_back(slots);
  }
  return steps;
}

// Runs `steps` through `reference` and `candidate` (a head on another backend), each on a fresh
// cache of 32 positions, expecting every step's logits and hidden states bitwise equal; returns
// the two caches (reference first) for the caller's check of the KV cache on its backend.
inline std::pair<std::unique_ptr<KVCache>, std::unique_ptr<KVCache>> expect_steps_bitwise(
    const EagleHead& reference, const EagleHead& candidate, const std::vector<EagleHead::Input>& steps, const std::string& where) {
  auto ref_cache = reference.new_cache(32);
  auto cache = candidate.new_cache(32);
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const EagleHead::Output want = reference.forward(*ref_cache, steps[s]);
    const EagleHead::Output got = candidate.forward(*cache, steps[s]);
    expect_bitwise(want.logits, got.logits, where + ", step " + std::to_string(s) + " logits");
    expect_bitwise(want.hidden, got.hidden, where + ", step " + std::to_string(s) + " hidden");
  }
  return {std::move(ref_cache), std::move(cache)};
}

}  // namespace specdec::testing
