#include "python/bindings/step_records.hpp"

#include <cstring>

#include "python/bindings/conversions.hpp"

namespace specdec::python {

void StepRecorder::on_sequential_step(const SequentialStep& step) {
  StepRecord r;
  r.kind = records_.empty() ? "prefill" : "sequential";
  r.index = static_cast<int>(records_.size());
  r.position = step.position;
  r.emitted = {step.token};
  r.verify_ms = static_cast<double>(step.step_ns) * 1e-6;
  if (logits_ && step.logits) {
    r.target_logits.resize(1, step.vocab_size);
    std::memcpy(r.target_logits.data(), step.logits, sizeof(float) * static_cast<std::size_t>(step.vocab_size));
  }
  records_.push_back(std::move(r));
}

void StepRecorder::on_speculative_step(const SpeculativeStep& step) {
  StepRecord r;
  r.kind = "speculative";
  r.index = static_cast<int>(records_.size());
  r.position = step.root_position;
  r.pending_token = step.pending_token;
  r.emitted = step.emitted;
  if (step.tree) {
    r.draft_tokens = step.tree->tokens;
    r.draft_parents = step.tree->parents;
  }
  if (step.verify) {
    r.accepted_path = step.verify->accepted_nodes;
    // The trace's bonus_token: the target's token after the accepted path (correction or bonus).
    if (!step.verify->emitted.empty()) r.bonus_token = step.verify->emitted.back();
    r.decisions = step.verify->decisions;
    r.decision_nodes = step.verify->decision_nodes;
    r.accept_probs = step.verify->accept_probs;
    for (const RandomDraw& d : step.verify->draws) r.uniforms.push_back(d.value);
  }
  r.drafter_forwards = step.drafter_forwards;
  r.planned_depth = step.planned_depth;
  r.draft_ms = static_cast<double>(step.draft_ns) * 1e-6;
  r.verify_ms = static_cast<double>(step.verify_ns) * 1e-6;
  if (logits_) {
    if (step.target_logits) r.target_logits = *step.target_logits;
    if (step.draft_probs) r.draft_probs = *step.draft_probs;
  }
  records_.push_back(std::move(r));
}

pybind11::list step_records_to_python(const std::vector<StepRecord>& records, bool logits, int vocab) {
  py::list out;
  for (const StepRecord& r : records) {
    py::dict d;
    d["kind"] = r.kind;
    d["index"] = r.index;
    d["position"] = r.position;
    d["pending_token"] = r.pending_token;
    d["emitted_tokens"] = int_array(r.emitted);
    d["draft_tokens"] = int_array(r.draft_tokens);
    d["draft_parents"] = int_array(r.draft_parents);
    d["accepted_path"] = int_array(r.accepted_path);
    d["accepted_length"] = r.accepted_path.size();
    d["bonus_token"] = r.bonus_token;
    d["accept_decisions"] = byte_array(r.decisions);
    d["accept_nodes"] = int_array(r.decision_nodes);
    d["accept_probs"] = double_array(r.accept_probs);
    d["accept_uniforms"] = double_array(r.uniforms);
    d["target_forwards"] = 1;  // every step, the prefill included, is one target forward
    d["drafter_forwards"] = r.drafter_forwards;
    d["planned_depth"] = r.planned_depth;
    d["draft_ms"] = r.draft_ms;
    d["verify_ms"] = r.verify_ms;
    if (logits) {
      d["target_logits"] = to_numpy(r.target_logits);
      if (r.draft_probs.empty()) {
        d["draft_probs"] = py::none();
      } else {
        d["draft_probs"] = double_rows(r.draft_probs, vocab);
      }
    }
    out.append(d);
  }
  return out;
}

}  // namespace specdec::python
