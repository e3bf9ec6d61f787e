// Recording one live run for validation (validation/run_recorder.hpp).
#include "validation/run_recorder.hpp"

#include "validation/step_replay.hpp"

namespace specdec::validation {

RunRecorder::RunRecorder(TraceMeta meta, const SamplingParams& sampling, uint32_t sequence)
    : trace_(std::move(meta), LogitRecording{true, 0}), sampling_(sampling), sequence_(sequence) {}

void RunRecorder::on_prefill(const std::vector<int32_t>& prompt, int64_t prefill_ns) { trace_.on_prefill(prompt, prefill_ns); }

void RunRecorder::on_sequential_step(const SequentialStep& step) {
  trace_.on_sequential_step(step);
  StepExtras e;
  const Matrix rows = Eigen::Map<const Matrix>(step.logits, 1, step.vocab_size);
  VerifyInput in;  // no draft: the one token decision at row 0
  in.target_logits = &rows;
  in.sampling = sampling_;
  in.sequence = sequence_;
  in.root_position = step.position;
  e.decisions = step_decisions(in);
  extras_.push_back(std::move(e));
}

void RunRecorder::on_speculative_step(const SpeculativeStep& step) {
  trace_.on_speculative_step(step);
  StepExtras e;
  if (step.draft_probs) e.draft_probs = *step.draft_probs;
  VerifyInput in;
  in.tree = step.tree;
  in.target_logits = step.target_logits;
  in.draft_probs = step.draft_probs;
  in.sampling = sampling_;
  in.sequence = sequence_;
  in.root_position = step.root_position;
  e.decisions = step_decisions(in);
  extras_.push_back(std::move(e));
}

void RunRecorder::on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) {
  trace_.on_finish(output, stop_reason);
}

RecordedRun RunRecorder::take() {
  RecordedRun r;
  r.trace = std::move(trace_.trace());
  r.extras = std::move(extras_);
  return r;
}

}  // namespace specdec::validation
