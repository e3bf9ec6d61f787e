#pragma once
// What a rerun of the live side is given instead of computing it: after a near-tie, the recorded
// side's target logits rows at that step, or its draft (tree and q); with --force-drafts, every
// recorded draft. The recorded drafts also make a proposer of their own (make_trace_proposer in
// validator.hpp), for a candidate whose drafter specdec does not have.
#include <map>
#include <optional>
#include <string>

#include "validation/sides.hpp"
#include "reference/drafting/proposer.hpp"
#include "traces/trace.hpp"

namespace specdec::validation {

struct Forcing {
  std::map<int, Matrix> logits;    // target forward (= step) -> the rows it returns instead
  std::map<int, Proposal> drafts;  // step -> the proposal made instead
};

// The rows a forced target forward returns at a step: the recorded step's rows, or, from a top-k
// trace, the live step's rows made to agree with the recorded top-k.
Matrix forced_logits(const StepRecord& recorded, const StepRecord& live);

// The recorded side's proposal at step `step` (its tree, and its q rows from the run's extras or
// the trace's log q rows); nothing when the trace keeps a sampled draft's q rows as top-k.
std::optional<Proposal> recorded_proposal(const Recorded& recorded, int step);

// Every recorded proposal of a trace, as forcings of the live side's drafts. Throws, naming the
// trace `name`, when a sampled draft's q rows are top-k.
void force_recorded_drafts(const Trace& trace, const std::string& name, Forcing& forcing);

}  // namespace specdec::validation
