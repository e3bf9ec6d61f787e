#pragma once
// Shapes of random-weight drafters for a target: a draft LM for draft-model speculation and
// EAGLE-1 / EAGLE-3 / P-EAGLE head configs in their published layouts. Used by `specdec
// init-model --head` and by `specdec bench` on random-weight presets.
#include <vector>

#include "reference/drafters/eagle_config.hpp"
#include "reference/model/model_config.hpp"

namespace specdec {

// A draft LM sharing the target's vocabulary, about a sixteenth of its per-layer width cost: a
// quarter of the hidden size, heads and intermediate size, a quarter of the layers (at least 1).
ModelConfig draft_lm_config(const ModelConfig& target);

// An EAGLE-family head drafting for `target`: EAGLE-1 and EAGLE-3 in the SafeAILab layout
// (EAGLE-1 with an fc bias), P-EAGLE in the AWS layout (own embeddings, the last token id as the
// mask token, trained depth 8). `layers` 0 = 1 for EAGLE, 2 for P-EAGLE; empty `aux_layers` =
// the target's default (EAGLE-3, P-EAGLE). Throws specdec::Error for layers < 0.
EagleHeadConfig random_head_config(EagleKind kind, const ModelConfig& target, int layers = 0, std::vector<int> aux_layers = {});

}  // namespace specdec
