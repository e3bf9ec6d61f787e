#pragma once
// What steers one sequence's speculation beyond its method: the speculation policy (how deep to
// draft each step, reference/policies), the drafters to fall back to when one fails, and the time
// budget of a proposal. Every choice here changes only the cost of decoding, never its output.
#include <cstdint>
#include <vector>

#include "reference/drafting/proposer.hpp"
#include "reference/policies/speculation_policy.hpp"

namespace specdec {

struct SpeculationControl {
  // This sequence's policy (one object per sequence); null: the method's whole shape every step.
  SpeculationPolicy* policy = nullptr;
  // Drafters tried, in order, after the decoder's proposer fails: it throws, drafts from a NaN or
  // +inf logit, proposes an invalid draft, or takes longer than draft_budget_ns. With none left the
  // sequence decodes plainly. Each must outlive the decoder.
  std::vector<Proposer*> fallbacks;
  // A proposal slower than this (ns) switches its drafter off after the step (0: no budget).
  int64_t draft_budget_ns = 0;
};

}  // namespace specdec
