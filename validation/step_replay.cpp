// Replay of one step's token decisions, live or recorded (validation/step_replay.hpp).
#include "validation/step_replay.hpp"

#include <algorithm>
#include <cmath>

#include "reference/core/error.hpp"

namespace specdec::validation {

std::vector<Decision> step_decisions(const VerifyInput& in) {
  if (!in.tree || in.tree->size() == 0) {
    if (!in.target_logits) throw Error("step_decisions: the target logits are required");
    const Matrix& rows = *in.target_logits;
    return {token_decision(rows.data(), static_cast<int>(rows.cols()), in.sampling, in.sequence, in.root_position)};
  }
  return verify_decisions(in);
}

std::optional<std::vector<std::vector<double>>> recorded_draft_probs(const StepRecord& r) {
  std::vector<std::vector<double>> q;
  if (r.draft_logits.empty()) return q;
  q.resize(r.draft_tokens.size() + 1);
  for (size_t i = 0; i < r.draft_logits.size(); ++i) {
    if (!r.draft_logits[i].is_full()) return std::nullopt;
    const int node = r.draft_logit_nodes.at(i);
    std::vector<double>& row = q.at(static_cast<size_t>(node + 1));
    for (float lq : r.draft_logits[i].full) row.push_back(std::isinf(lq) && lq < 0 ? 0.0 : std::exp(static_cast<double>(lq)));
  }
  return q;
}

std::optional<std::vector<Decision>> recorded_step_decisions(const StepRecord& r, const SamplingParams& sampling, uint32_t sequence) {
  if (r.target_logits.empty()) return std::nullopt;
  const bool full = r.target_logits[0].is_full();
  const int V = full ? static_cast<int>(r.target_logits[0].full.size()) : r.target_logits[0].summary.vocab_size;
  const DraftTree tree{r.draft_tokens, r.draft_parents};
  if (full) {
    Matrix rows(static_cast<Eigen::Index>(r.target_logits.size()), V);
    for (size_t j = 0; j < r.target_logits.size(); ++j) {
      if (!r.target_logits[j].is_full()) return std::nullopt;
      std::copy(r.target_logits[j].full.begin(), r.target_logits[j].full.end(), rows.row(static_cast<Eigen::Index>(j)).data());
    }
    const auto q = recorded_draft_probs(r);
    if (tree.size() > 0 && !q) return std::nullopt;
    VerifyInput in;
    in.tree = &tree;
    in.target_logits = &rows;
    in.draft_probs = q ? &*q : nullptr;
    in.sampling = sampling;
    in.sequence = sequence;
    in.root_position = static_cast<int32_t>(r.position);
    return step_decisions(in);
  }
  if (sampling.mode != SamplingParams::Mode::greedy) return std::nullopt;
  return match_path_decisions(tree, static_cast<int32_t>(r.position), [&](int row, int32_t position) {
    const LogitSummary& s = r.target_logits.at(static_cast<size_t>(row)).summary;
    return topk_choice(s.topk_ids, s.topk_values, s.vocab_size, position);
  });
}

}  // namespace specdec::validation
