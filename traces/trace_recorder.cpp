#include "traces/trace_recorder.hpp"

#include <algorithm>

namespace specdec {

TraceRecorder::TraceRecorder(TraceMeta meta, LogitRecording logits) : logits_(logits) { trace_.meta = std::move(meta); }

LogitRecord TraceRecorder::record(const float* row, int vocab) const {
  return logits_.full ? LogitRecord::full_row(row, vocab) : LogitRecord::topk_row(row, vocab, std::min(logits_.top_k, vocab));
}

void TraceRecorder::on_prefill(const std::vector<int32_t>& prompt, int64_t prefill_ns) {
  trace_.prompt = prompt;
  trace_.timing.prefill_ns = prefill_ns;
}

void TraceRecorder::on_sequential_step(const SequentialStep& step) {
  StepRecord s;
  s.position = step.position;
  s.emitted_tokens = {step.token};
  s.target_logits.push_back(record(step.logits, step.vocab_size));
  trace_.steps.push_back(std::move(s));
  trace_.timing.step_ns["step"].push_back(step.step_ns);
}

void TraceRecorder::on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) {
  trace_.output = output;
  trace_.stop_reason = stop_reason;
}

}  // namespace specdec
