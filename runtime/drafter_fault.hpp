#pragma once
// --drafter-fault KIND@STEP: a fault injected into a drafter, to exercise drafter fallback
// (SpeculationControl::fallbacks) on real models. The faulty drafter is a Proposer wrapper that
// drafts as the wrapped one does, except at its STEP-th proposal (the decoding step STEP while it
// drafts every step, as under the fixed policy), where it
//   throw — throws specdec::Error ("injected fault"),
//   nan   — fails as a drafter whose logits hold a NaN does (choose_draft_token's error),
//   slow  — drafts normally after sleeping twice the draft budget (50 ms without one), so that the
//           proposal runs over --draft-budget-ms.
// None of these changes the output: the decoder switches the drafter off and falls back.
#include <cstdint>
#include <memory>
#include <string>

#include "reference/drafting/proposer.hpp"

namespace specdec {

struct DrafterFault {
  enum class Kind { throw_error, nan, slow };
  Kind kind = Kind::throw_error;
  int step = 1;  // 1-based proposal of the drafter

  std::string to_string() const;  // "throw@2"
};

// "throw@2", "nan@1", "slow@3". Throws specdec::Error naming `where` and what it expected.
DrafterFault parse_drafter_fault(const std::string& text, const std::string& where = "--drafter-fault");

class FaultyProposer final : public Proposer {
 public:
  // `inner` must outlive the wrapper. `draft_budget_ns`: the run's budget (0: none), which a slow
  // fault sleeps twice.
  FaultyProposer(Proposer& inner, DrafterFault fault, int64_t draft_budget_ns = 0)
      : inner_(inner), fault_(fault), budget_ns_(draft_budget_ns) {}

  std::string name() const override { return inner_.name(); }
  bool wants_final_hidden() const override { return inner_.wants_final_hidden(); }
  std::vector<int> wanted_aux_layers() const override { return inner_.wanted_aux_layers(); }
  int max_nodes() const override { return inner_.max_nodes(); }
  int max_depth() const override { return inner_.max_depth(); }
  Proposal propose(const DraftContext& context) override;

  int proposals() const { return proposals_; }

 private:
  Proposer& inner_;
  DrafterFault fault_;
  int64_t budget_ns_ = 0;
  int proposals_ = 0;
};

}  // namespace specdec
