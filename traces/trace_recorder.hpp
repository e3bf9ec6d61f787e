#pragma once
// Builds a Trace from what a decoding algorithm reports (DecodeObserver). Semantics go into the
// step records, wall times into Trace::timing.
#include "reference/decoding/decode_observer.hpp"
#include "traces/trace.hpp"

namespace specdec {

struct LogitRecording {
  bool full = false;  // every logit of every row, or top-k + logsumexp + checksum
  int top_k = 20;
};

class TraceRecorder final : public DecodeObserver {
 public:
  TraceRecorder(TraceMeta meta, LogitRecording logits);

  void on_prefill(const std::vector<int32_t>& prompt, int64_t prefill_ns) override;
  void on_sequential_step(const SequentialStep& step) override;
  void on_speculative_step(const SpeculativeStep& step) override;
  void on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) override;

  // The finished trace; timing.prefill_ns/total_ns are the caller's to fill from the run's stats.
  Trace& trace() { return trace_; }

 private:
  LogitRecord record(const float* row, int vocab) const;

  LogitRecording logits_;
  Trace trace_;
};

}  // namespace specdec
