// Draft-model speculative sampling (Leviathan et al. 2023; Chen et al. 2023): a small language
// model sharing the target's vocabulary drafts a chain of K tokens, one forward each.
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/methods/entries.hpp"

namespace specdec::methods {

namespace {

std::unique_ptr<Proposer> make(const MethodSpec& s, const ProposerInputs& in) {
  return std::make_unique<DraftModelProposer>(*in.draft_lm, *in.target, s.k, in.capacity);
}

// The first forward feeds the bonus token, and also the last draft when every draft was accepted
// (the last draft is never fed while drafting: nothing follows it); then one token per draft.
DraftSchedule schedule(const StepShape& shape, const CatchUp& c) {
  DraftSchedule s;
  s.rows.push_back(1.0 + c.all_accepted);
  for (int i = 1; i < shape.k; ++i) s.rows.push_back(1.0);
  return s;
}

}  // namespace

MethodEntry draft_model() {
  MethodEntry e;
  e.name = "draft";
  e.aliases = {"draft_model", "draft-model"};
  e.title = "draft model";
  e.summary = "a small language model sharing the target's vocabulary drafts a chain";
  e.drafter = {DrafterNeed::Kind::language_model, EagleKind::eagle1, "a small model sharing the target's vocabulary", "draft"};
  e.shapes.chain = true;
  e.make_proposer = &make;
  e.schedule = &schedule;
  return e;
}

}  // namespace specdec::methods
