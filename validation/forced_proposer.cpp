#include "validation/forced_proposer.hpp"

namespace specdec::validation {

Proposal ForcedProposer::propose(const DraftContext& context) {
  *step_ = current_step_ ? current_step_() : *step_ + 1;
  Proposal own = inner_.propose(context);
  const auto it = forced_.find(*step_);
  if (it == forced_.end()) return own;
  Proposal p = it->second;
  p.drafter_forwards = own.drafter_forwards;
  return p;
}

}  // namespace specdec::validation
