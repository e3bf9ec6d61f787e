#pragma once
// Records one decoding run for validation: the trace (every logits row in full) plus, per step,
// what a trace cannot hold exactly: the token decisions with their margins, computed from the
// very inputs the acceptance rule saw, and the draft distributions in double precision.
#include <vector>

#include "validation/decision_margin.hpp"
#include "traces/trace_recorder.hpp"

namespace specdec::validation {

struct StepExtras {
  std::vector<Decision> decisions;               // in evaluation order
  std::vector<std::vector<double>> draft_probs;  // the proposal's q rows (empty: deterministic)
};

struct RecordedRun {
  Trace trace;
  std::vector<StepExtras> extras;  // one per trace step
};

class RunRecorder final : public DecodeObserver {
 public:
  RunRecorder(TraceMeta meta, const SamplingParams& sampling, uint32_t sequence);

  void on_prefill(const std::vector<int32_t>& prompt, int64_t prefill_ns) override;
  void on_sequential_step(const SequentialStep& step) override;
  void on_speculative_step(const SpeculativeStep& step) override;
  void on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) override;

  RecordedRun take();
  // The step the run is at: steps recorded so far (the prefill is step 0), so during drafting the
  // verification step being drafted for (1 = the first).
  int next_step() { return static_cast<int>(trace_.trace().steps.size()); }

 private:
  TraceRecorder trace_;
  SamplingParams sampling_;
  uint32_t sequence_;
  std::vector<StepExtras> extras_;
};

}  // namespace specdec::validation
