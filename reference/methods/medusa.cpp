// Medusa (Cai et al. 2024): K residual heads on the target's last hidden state draft every depth
// in one forward — head d − 1 drafts depth d — as a top-1 chain or a static Cartesian tree of
// per-head candidates. (Medusa's typical acceptance is lossy and is not what this entry verifies
// with: drafts go through the run's acceptor, so greedy and coupled output equal sequential.)
#include "reference/drafters/medusa_heads.hpp"
#include "reference/drafting/medusa_proposer.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/methods/entries.hpp"

namespace specdec::methods {

namespace {

std::unique_ptr<Proposer> make(const MethodSpec& s, const ProposerInputs& in) {
  MedusaOptions o;
  o.k = s.k;
  if (s.tree != "chain") {
    o.shape = MedusaShape::tree;
    o.choices = tree_choices_from_spec(s.tree);
  }
  return std::make_unique<MedusaProposer>(*in.medusa, o);
}

// One forward of all heads over the one hidden row that produced the pending token, whatever the
// last step emitted (the heads keep no cache to catch up).
DraftSchedule schedule(const StepShape&, const CatchUp&) { return DraftSchedule{{1.0}}; }

}  // namespace

MethodEntry medusa() {
  MethodEntry e;
  e.name = "medusa";
  e.title = "Medusa";
  e.summary = "K residual heads on the target's last hidden state draft every depth in one forward; chain or static tree";
  e.drafter.kind = DrafterNeed::Kind::medusa_heads;
  e.drafter.description = "Medusa heads";
  e.drafter.bundled_dir = "medusa";
  e.shapes.chain = e.shapes.static_tree = true;
  // One forward drafts every depth, as P-EAGLE; vLLM ran Medusa through the same top-1 proposer.
  e.cost_siblings = {"peagle", "eagle"};
  e.make_proposer = &make;
  e.schedule = &schedule;
  return e;
}

}  // namespace specdec::methods
