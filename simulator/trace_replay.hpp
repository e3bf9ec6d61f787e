#pragma once
// Replay of recorded traces (traces/trace.hpp): the per-step accepted lengths become a replay
// acceptance model, so a measured run can be re-costed on any hardware; the recorded step times
// become calibration rows.
#include <filesystem>
#include <optional>
#include <vector>

#include "simulator/acceptance.hpp"
#include "simulator/calibration.hpp"
#include "traces/trace.hpp"

namespace specdec::sim {

struct TraceAcceptance {
  std::vector<int> accepted;  // drafts accepted per speculative step (the bonus token excluded)
  int recorded_k = 0;         // drafted depth (chain: K; tree: deepest node)
  bool tree = false;          // some step drafted a tree rather than a chain
};

// Per-step accepted lengths of a trace's speculative steps (step 0, the prefill, is skipped, as
// is any step without drafts). Throws specdec::Error for a sequential trace.
TraceAcceptance trace_acceptance(const Trace& trace);
AcceptancePtr replay_acceptance_from_trace(const Trace& trace);
AcceptancePtr replay_acceptance_from_file(const std::filesystem::path& path);

// The configurations a trace measured, as calibration rows: median recorded step time, mean
// context, the trace's AL; the target (and a draft LM) shape from the recorded config.json. EAGLE
// drafters are described by the recorded drafter config (flat HF/SafeAILab/AWS layout or the
// speculators layout with a nested transformer_layer_config). Returns nothing when the trace
// carries no step timings.
std::optional<MeasuredConfig> measured_config_from_trace(const Trace& trace, const std::string& label);

// One calibration row per trace file (labelled by the file's stem), for `specdec simulate
// --calibrate-traces`. Throws specdec::Error naming the file when a trace cannot be read, has no
// step timings, or cannot be turned into a row.
CalibrationSet calibration_set_from_traces(const std::vector<std::filesystem::path>& paths);

}  // namespace specdec::sim
