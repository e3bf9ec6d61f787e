#pragma once
// What a decoding algorithm reports as it runs, so that traces, the teaching views and the
// benchmarks can watch every step without the algorithm knowing about them. Semantics (tokens,
// logits) and timings are reported separately.
#include <cstdint>
#include <string>
#include <vector>

#include "reference/acceptance/acceptor.hpp"
#include "reference/acceptance/draft_tree.hpp"
#include "reference/core/tensor.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/proposer.hpp"

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

// One step of speculative decoding: the proposal, the target's verification and the outcome.
struct SpeculativeStep {
  int index = 0;
  int32_t root_position = 0;     // absolute position of the depth-1 draft tokens
  int32_t pending_token = 0;     // the last emitted token, fed to the target with the drafts
  const DraftTree* tree = nullptr;
  const std::vector<std::vector<double>>* draft_probs = nullptr;  // empty for deterministic drafts
  const Matrix* target_logits = nullptr;  // (N + 1, V): at the pending token, then after each node
  const VerifyResult* verify = nullptr;
  std::vector<int32_t> emitted;  // what this step appended to the output (cut at EOS / max tokens)
  int drafter_forwards = 0;
  int64_t draft_ns = 0;
  int64_t verify_ns = 0;
  // The speculation policy's choice for this step (reference/policies): the depth it planned (0:
  // a plain step, the tree is empty), the drafter's confidence in each chained draft when its stop
  // rule applied, and its state after observing the step ("" without a policy).
  int planned_depth = 0;
  const std::vector<double>* confidences = nullptr;
  std::string policy_state;
  // Draft-free drafters: where each node's token was copied from (node order); null otherwise.
  const std::vector<DraftSource>* sources = nullptr;
};

class DecodeObserver {
 public:
  virtual ~DecodeObserver() = default;
  virtual void on_prefill(const std::vector<int32_t>& /*prompt*/, int64_t /*prefill_ns*/) {}
  virtual void on_sequential_step(const SequentialStep& /*step*/) {}
  virtual void on_speculative_step(const SpeculativeStep& /*step*/) {}
  virtual void on_finish(const std::vector<int32_t>& /*output*/, const std::string& /*stop_reason*/) {}
  // A drafter was switched off (SpeculationControl): reported before the step it failed in.
  virtual void on_fallback(const DrafterFallback& /*event*/) {}
};

}  // namespace specdec
