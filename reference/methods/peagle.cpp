// P-EAGLE (parallel drafting): an N-layer EAGLE-3-style head predicts all K drafts in one forward —
// the new pairs, then K − 1 mask slots — as a chain or a static tree of per-position candidates.
#include "reference/drafting/peagle_proposer.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/methods/entries.hpp"

namespace specdec::methods {

namespace {

std::unique_ptr<Proposer> make(const MethodSpec& s, const ProposerInputs& in) {
  PEagleOptions o;
  o.k = s.k;
  o.force = s.force_depth;
  if (s.tree != "chain") {
    o.shape = PEagleShape::tree;
    o.choices = tree_choices_from_spec(s.tree);
  }
  return std::make_unique<PEagleProposer>(*in.head, o, in.capacity);
}

// One forward: the pairs of every token the last step emitted, then a mask slot for each depth
// after the first.
DraftSchedule schedule(const StepShape& shape, const CatchUp& c) {
  return DraftSchedule{{c.emitted + shape.max_depth() - 1.0}};
}

}  // namespace

MethodEntry peagle() {
  MethodEntry e;
  e.name = "peagle";
  e.aliases = {"p-eagle", "p_eagle"};
  e.title = "P-EAGLE";
  e.summary = "an N-layer head drafts all K tokens in one forward (parallel drafting); chain or static tree";
  e.drafter = {DrafterNeed::Kind::eagle_head, EagleKind::peagle, "a P-EAGLE head", "peagle"};
  e.shapes.chain = e.shapes.static_tree = e.shapes.force_depth = true;
  e.cost_siblings = {"eagle3", "eagle"};  // vLLM drafts P-EAGLE as a parallel-drafting EAGLE-3 head
  e.make_proposer = &make;
  e.schedule = &schedule;
  return e;
}

}  // namespace specdec::methods
