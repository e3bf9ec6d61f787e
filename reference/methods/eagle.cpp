// EAGLE-1 and EAGLE-3 (Li et al. 2024, 2025): a one-layer head over the target's features drafts
// autoregressively at feature level — a chain, a static tree (one forward per level) or an
// EAGLE-2 dynamic tree (top_k frontier nodes per expansion, reranked to total_tokens). One
// proposer serves both; they differ in the features the head reads (docs/drafters.md).
#include "reference/drafting/eagle_proposer.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/methods/eagle_family.hpp"
#include "reference/methods/entries.hpp"

namespace specdec::methods {

EagleOptions eagle_shape_options(const MethodSpec& s) {
  EagleOptions o;
  o.k = s.k;
  if (s.tree == "dynamic") {
    o.shape = EagleShape::dynamic_tree;
    o.depth = s.depth;
    o.top_k = s.tree_top_k;
    o.total_tokens = s.total_tokens;
  } else if (s.tree != "chain") {
    o.shape = EagleShape::static_tree;
    o.choices = tree_choices_from_spec(s.tree);
  }
  return o;
}

// The first forward re-reads the pairs (feature, token) of every token the last step emitted and
// gives the first level's logits; then one forward per level: a chain's next draft, a static
// tree's nodes that have children, a dynamic tree's top_k frontier nodes `depth` times.
DraftSchedule eagle_family_schedule(const StepShape& shape, const CatchUp& c) {
  DraftSchedule s;
  s.rows.push_back(c.emitted);
  switch (shape.kind) {
    case StepShape::Kind::chain:
      for (int i = 1; i < shape.k; ++i) s.rows.push_back(1.0);
      break;
    case StepShape::Kind::static_tree:
      for (int n : shape.expanded_per_depth)
        if (n > 0) s.rows.push_back(n);
      break;
    case StepShape::Kind::dynamic_tree:
      for (int d = 0; d < shape.depth; ++d) s.rows.push_back(shape.top_k);
      break;
  }
  return s;
}

namespace {

std::unique_ptr<Proposer> make(const MethodSpec& s, const ProposerInputs& in) {
  return std::make_unique<EagleProposer>(*in.head, eagle_shape_options(s), in.capacity);
}

MethodEntry eagle_family(EagleKind head) {
  MethodEntry e;
  e.drafter.kind = DrafterNeed::Kind::eagle_head;
  e.drafter.head = head;
  e.shapes.chain = e.shapes.static_tree = e.shapes.dynamic_tree = true;
  e.make_proposer = &make;
  e.schedule = &eagle_family_schedule;
  return e;
}

}  // namespace

MethodEntry eagle1() {
  MethodEntry e = eagle_family(EagleKind::eagle1);
  e.name = "eagle";
  e.aliases = {"eagle1", "eagle-1"};
  e.title = "EAGLE-1";
  e.summary = "a one-layer head over the target's last hidden state; chain, static or dynamic (EAGLE-2) tree";
  e.drafter.description = "an EAGLE-1 head";
  e.drafter.bundled_dir = "eagle1";
  e.cost_siblings = {"eagle3", "peagle"};
  return e;
}

MethodEntry eagle3() {
  MethodEntry e = eagle_family(EagleKind::eagle3);
  e.name = "eagle3";
  e.aliases = {"eagle-3"};
  e.title = "EAGLE-3";
  e.summary = "a one-layer head fusing three target layers, its own draft vocabulary; chain or tree";
  e.drafter.description = "an EAGLE-3 head";
  e.drafter.bundled_dir = "eagle3";
  e.cost_siblings = {"eagle", "peagle"};
  return e;
}

}  // namespace specdec::methods
