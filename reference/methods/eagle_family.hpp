#pragma once
// What the entries drafting with EagleProposer share (eagle.cpp, mtp.cpp): the proposer's shape
// options from a method spec, and the drafter forwards of one step.
#include "reference/drafting/eagle_proposer.hpp"
#include "reference/methods/draft_schedule.hpp"
#include "reference/methods/method_spec.hpp"

namespace specdec::methods {

// K, or the static tree's choices, or the dynamic tree's depth / top_k / total_tokens of `spec`.
EagleOptions eagle_shape_options(const MethodSpec& spec);

// The first forward re-reads the pairs of every token the last step emitted and gives the first
// level's logits; then one forward per level.
DraftSchedule eagle_family_schedule(const StepShape& shape, const CatchUp& catch_up);

}  // namespace specdec::methods
