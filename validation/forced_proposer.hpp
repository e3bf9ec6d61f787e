#pragma once
// A Proposer wrapper for validation: it numbers the steps it drafts for (so that drafter forwards
// can be matched across backends) and, at chosen steps, returns a given proposal instead of the
// drafter's own: the reference's draft after a drafter near-tie. The drafter still runs, so its
// state and its forward count stay what they would be.
#include <functional>
#include <map>

#include "reference/drafting/proposer.hpp"

namespace specdec::validation {

class ForcedProposer final : public Proposer {
 public:
  // `inner` must outlive the wrapper. `*step` is set to the step being drafted (1 = the first
  // verification step) before the drafter runs; drafter forwards are stamped with it.
  // `current_step` (optional) gives the decoding step being drafted; without it the wrapper counts
  // its own proposals, which equals the step while every step drafts (the fixed policy).
  ForcedProposer(Proposer& inner, int* step, std::function<int()> current_step = nullptr)
      : inner_(inner), step_(step), current_step_(std::move(current_step)) {
    *step_ = 0;
  }

  std::string name() const override { return inner_.name(); }
  bool wants_final_hidden() const override { return inner_.wants_final_hidden(); }
  std::vector<int> wanted_aux_layers() const override { return inner_.wanted_aux_layers(); }
  int max_nodes() const override { return inner_.max_nodes(); }
  int max_depth() const override { return inner_.max_depth(); }
  Proposal propose(const DraftContext& context) override;

  // Step `step` proposes `proposal` (its tree and q; the forward count stays the drafter's).
  void force(int step, Proposal proposal) { forced_[step] = std::move(proposal); }

 private:
  Proposer& inner_;
  int* step_;
  std::function<int()> current_step_;
  std::map<int, Proposal> forced_;
};

}  // namespace specdec::validation
