#pragma once
// Where inside a target forward two runs part: the first layer and sub-step, in forward order,
// whose recorded state (traces/SCHEMA.md, "Per-layer target tensors") is beyond the hidden-state
// bound at any recorded row: the search, and the two views it runs on, validate --candidate's
// (an outside engine's trace against the live reference's forward) and trace diff's (trace
// against trace).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "validation/observed_model.hpp"
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

// validate --candidate: step `step` of a recorded trace with per-layer states (the candidate's)
// against the live reference's target forward of that step (its layer_states). The departure's
// row is the forward's row. Nothing when either side records no states there.
std::optional<LayerDeparture> live_layer_departure(const Trace& recorded, std::size_t step, const ForwardRecord& live,
                                                   double bound);

// trace diff: step `step` of two traces that record the same per-layer rows (same layout, same
// row nodes): B's states (the candidate's) against A's (the reference's). The departure's row is
// the recorded row. Nothing when they do not record the same rows.
std::optional<LayerDeparture> trace_layer_departure(const Trace& a, const Trace& b, std::size_t step, double bound);

}  // namespace specdec::validation
