#pragma once
// What a decoding algorithm reports as it runs, so that traces, the teaching views and the
// benchmarks can watch every step without the algorithm knowing about them. Semantics (tokens,
// logits) and timings are reported separately.
#include <cstdint>
#include <string>
#include <vector>

namespace specdec {

// One step of sequential decoding: the target's logits row and the token chosen from it.
struct SequentialStep {
  int index = 0;           // 0-based step number
  int32_t position = 0;    // absolute position of the emitted token in the sequence
  const float* logits = nullptr;  // (V) the row the token was chosen from
  int vocab_size = 0;
  int32_t token = 0;
  int64_t step_ns = 0;     // wall time of the forward that produced these logits
};

class DecodeObserver {
 public:
  virtual ~DecodeObserver() = default;
  virtual void on_prefill(const std::vector<int32_t>& /*prompt*/, int64_t /*prefill_ns*/) {}
  virtual void on_sequential_step(const SequentialStep& /*step*/) {}
  virtual void on_finish(const std::vector<int32_t>& /*output*/, const std::string& /*stop_reason*/) {}
};

}  // namespace specdec
