// What a rerun of the live side is given instead of computing it, and the recorded drafts as a
// proposer (validation/forcing.hpp).
#include "validation/forcing.hpp"

#include <algorithm>

#include "validation/row_comparison.hpp"
#include "validation/step_replay.hpp"
#include "validation/validator.hpp"
#include "reference/core/error.hpp"

namespace specdec::validation {

Matrix forced_logits(const StepRecord& r, const StepRecord& live) {
  if (r.target_logits.empty() || live.target_logits.empty()) throw Error("validation: no logits to force at this step");
  const int V = static_cast<int>(live.target_logits[0].full.size());
  Matrix m(static_cast<Eigen::Index>(r.target_logits.size()), V);
  for (size_t j = 0; j < r.target_logits.size(); ++j) {
    const std::vector<float> row = r.target_logits[j].is_full()
                                       ? r.target_logits[j].full
                                       : forced_row_from_summary(live.target_logits[j].full.data(), V, r.target_logits[j].summary);
    if (static_cast<int>(row.size()) != V) throw Error("validation: the reference's logits rows have " + std::to_string(row.size()) + " entries; the candidate's " + std::to_string(V));
    std::copy(row.begin(), row.end(), m.row(static_cast<Eigen::Index>(j)).data());
  }
  return m;
}

std::optional<Proposal> recorded_proposal(const Recorded& recorded, int step) {
  const StepRecord& r = recorded.trace->steps.at(static_cast<size_t>(step));
  Proposal p;
  p.tree = DraftTree{r.draft_tokens, r.draft_parents};
  if (recorded.extras) {
    p.draft_probs = (*recorded.extras)[static_cast<size_t>(step)].draft_probs;
    return p;
  }
  auto q = recorded_draft_probs(r);
  if (!q) return std::nullopt;
  p.draft_probs = std::move(*q);
  return p;
}

void force_recorded_drafts(const Trace& trace, const std::string& name, Forcing& forcing) {
  for (std::size_t s = 0; s < trace.steps.size(); ++s) {
    const StepRecord& r = trace.steps[s];
    if (r.draft_tokens.empty()) continue;
    const auto q = recorded_draft_probs(r);
    if (!q) {
      throw Error(name + ": step " + std::to_string(s) + " keeps its draft distributions as top-k rows; forcing its drafts needs them in full");
    }
    Proposal p;
    p.tree = DraftTree{r.draft_tokens, r.draft_parents};
    p.draft_probs = *q;
    forcing.drafts[static_cast<int>(s)] = std::move(p);
  }
}

namespace {

// Proposes, step by step, what a recorded trace proposed (--force-drafts without a drafter of the
// candidate's kind): its trees and, for sampled drafts, its q rows.
class TraceProposer final : public Proposer {
 public:
  TraceProposer(const Trace& trace, std::string name) : trace_(trace), name_(std::move(name)) {
    Forcing f;
    force_recorded_drafts(trace_, name_, f);
    proposals_ = std::move(f.drafts);
    for (const auto& [s, p] : proposals_) max_nodes_ = std::max(max_nodes_, p.tree.size());
  }
  std::string name() const override { return "recorded drafts of " + name_; }
  int max_nodes() const override { return std::max(1, max_nodes_); }
  Proposal propose(const DraftContext&) override {
    // Past what the trace recorded (a live run that went another way): no draft, so the step
    // verifies only the pending token and the comparison reports where the runs parted.
    const auto it = proposals_.find(++step_);
    return it == proposals_.end() ? Proposal{} : it->second;
  }

 private:
  const Trace& trace_;
  std::string name_;
  std::map<int, Proposal> proposals_;
  int max_nodes_ = 0;
  int step_ = 0;
};

}  // namespace

std::unique_ptr<Proposer> make_trace_proposer(const Trace& trace, const std::string& name) {
  return std::make_unique<TraceProposer>(trace, name);
}

}  // namespace specdec::validation
