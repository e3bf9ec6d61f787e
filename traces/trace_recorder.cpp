#include "traces/trace_recorder.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "reference/sampling/counter_rng.hpp"

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
  if (trace_.meta.method != "sequential") {  // the prefill step of a speculative run: verify only
    trace_.timing.step_ns["draft"].push_back(0);
    trace_.timing.step_ns["verify"].push_back(step.step_ns);
  }
}

void TraceRecorder::on_speculative_step(const SpeculativeStep& step) {
  const DraftTree& tree = *step.tree;
  const VerifyResult& v = *step.verify;
  StepRecord s;
  s.position = step.root_position;
  s.emitted_tokens = step.emitted;
  const Matrix& logits = *step.target_logits;
  for (Eigen::Index r = 0; r < logits.rows(); ++r) s.target_logits.push_back(record(logits.row(r).data(), static_cast<int>(logits.cols())));
  s.draft_tokens = tree.tokens;
  s.draft_parents = tree.parents;
  // Sampled drafts: the distributions they were drawn from, stored as log-probabilities (a logits
  // row whose softmax is q). Row r belongs to the point r − 1 (−1 = the root).
  if (step.draft_probs) {
    for (size_t r = 0; r < step.draft_probs->size(); ++r) {
      const auto& q = (*step.draft_probs)[r];
      if (q.empty()) continue;
      std::vector<float> lq(q.size());
      for (size_t i = 0; i < q.size(); ++i) lq[i] = q[i] > 0 ? static_cast<float>(std::log(q[i])) : -std::numeric_limits<float>::infinity();
      s.draft_logits.push_back(record(lq.data(), static_cast<int>(lq.size())));
      s.draft_logit_nodes.push_back(static_cast<int32_t>(r) - 1);
    }
  }
  s.accepted_path = v.accepted_nodes;
  s.accept_decisions = v.decisions;
  s.accept_nodes = v.decision_nodes;
  for (const RandomDraw& d : v.draws) {
    s.accept_uniforms.push_back(d.value);
    s.random_counters.push_back(philox_counter(d.sequence, d.position, static_cast<RandomPurpose>(d.purpose), d.index));
  }
  s.bonus_token = v.emitted.back();  // the schema's bonus_token: the target's token after the accepted path
  if (step.sources) {  // a draft-free drafter: where each node was copied from
    for (const DraftSource& d : *step.sources) {
      s.draft_sources.push_back({d.origin == DraftSource::Origin::responses ? DraftSourceRecord::Origin::responses
                                                                            : DraftSourceRecord::Origin::context,
                                 d.position, d.match_length, d.request});
    }
  }
  trace_.steps.push_back(std::move(s));
  trace_.timing.step_ns["step"].push_back(step.draft_ns + step.verify_ns);
  trace_.timing.step_ns["draft"].push_back(step.draft_ns);
  trace_.timing.step_ns["verify"].push_back(step.verify_ns);
}

void TraceRecorder::on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) {
  trace_.output = output;
  trace_.stop_reason = stop_reason;
}

}  // namespace specdec
