#pragma once
// One live run of the method on a backend, observed for the comparison: its trace with exact
// decisions and q rows (RunRecorder), every target and draft LM forward and, when asked, the
// target's per-layer states and every drafter head forward; with the forcings of earlier near-ties.
#include "validation/forcing.hpp"
#include "validation/sides.hpp"
#include "validation/validator.hpp"

namespace specdec::validation {

// `layer_states`: keep the target's per-layer states; `drafter_rows`: keep every drafter forward's
// inputs and outputs (to compare with a candidate trace's recorded drafter rows).
LiveRun run_live(const ValidationSetup& setup, const Backend& backend, const Forcing& forcing, bool layer_states = false,
                 bool drafter_rows = false);

}  // namespace specdec::validation
