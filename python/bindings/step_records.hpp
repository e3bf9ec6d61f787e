#pragma once
// generate(..., record_steps=True): every step of a run kept in memory, as a trace would record it
// (traces/SCHEMA.md, "/steps"), without writing a file. A DecodeObserver copies what each step
// reports while the run holds no Python lock; the records become Python dicts afterwards.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/tensor.hpp"
#include "reference/decoding/decode_observer.hpp"

namespace specdec::python {

struct StepRecord {
  std::string kind;  // "prefill" (the token the prompt's forward gives) | "sequential" | "speculative"
  int index = 0;
  int32_t position = 0;  // absolute position of the first token the step emits
  int32_t pending_token = -1;  // speculative: the last emitted token, fed to the target with the drafts
  std::vector<int32_t> emitted;  // (E) what the step appended to the output
  std::vector<int32_t> draft_tokens, draft_parents;  // (N) the draft tree in node order; parent −1 = root
  std::vector<int32_t> accepted_path;  // (A) accepted nodes from the root down
  int32_t bonus_token = -1;  // the target's token after the accepted path (correction or bonus); −1 unless speculative
  std::vector<uint8_t> decisions;      // (D) acceptance tests in evaluation order: 1 accept, 0 reject
  std::vector<int32_t> decision_nodes; // (D) the node each test judged
  std::vector<double> accept_probs;    // (D) min(1, p/q) of rejection sampling; empty for match
  std::vector<double> uniforms;        // (U) the uniforms drawn, in draw order
  int drafter_forwards = 0;
  int planned_depth = 0;
  double draft_ms = 0, verify_ms = 0;
  // With step_logits: the target's logits (sequential: (1, V); speculative: (N + 1, V)) and the
  // drafter's distributions ((N + 1, V), empty for deterministic drafts).
  Matrix target_logits;
  std::vector<std::vector<double>> draft_probs;
};

class StepRecorder final : public DecodeObserver {
 public:
  explicit StepRecorder(bool logits) : logits_(logits) {}
  void on_sequential_step(const SequentialStep& step) override;
  void on_speculative_step(const SpeculativeStep& step) override;
  const std::vector<StepRecord>& records() const { return records_; }

 private:
  bool logits_;
  std::vector<StepRecord> records_;
};

// The records as a list of dicts of numpy arrays and numbers (docs/python.md, "Per-step records");
// `vocab` is V, for the shape of empty distributions.
pybind11::list step_records_to_python(const std::vector<StepRecord>& records, bool logits, int vocab);

}  // namespace specdec::python
