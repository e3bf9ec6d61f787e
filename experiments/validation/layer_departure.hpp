#pragma once
// Where inside a target forward two runs part: the first layer and sub-step, in forward order,
// whose recorded state (traces/SCHEMA.md, "Per-layer target tensors") is beyond the hidden-state
// bound at any recorded row. Shared by validate --candidate (trace against the live reference)
// and trace diff (trace against trace).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "traces/trace.hpp"

namespace specdec::validation {

struct LayerDeparture {
  int layer = -1;
  std::string substep;  // input_norm | attention | post_attention_norm | mlp
  int row = -1;         // the recorded row (0 .. rows-1) where it is worst
  double nmse = 0;
};

// `state(row, layer, u)` gives the candidate's and the reference's H-wide state of recorded row
// `row`, layer `layer` and the layout's sub-step `u`, or nullptrs when there is none to compare
// (then nothing is named).
using LayerStates = std::function<std::pair<const float*, const float*>(int64_t row, int64_t layer, int64_t u)>;
std::optional<LayerDeparture> first_layer_departure(const TargetLayersLayout& layout, int64_t rows, double bound,
                                                    const LayerStates& state);

}  // namespace specdec::validation
