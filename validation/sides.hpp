#pragma once
// The two sides of a validation, named once:
// - live: the run specdec executes now, on the backend under validation; after a near-tie it
//   runs again, given the recorded side's logits or draft at that step (validation/forcing.hpp);
// - recorded: what it is compared with, fixed for the whole validation: a trace read from disk
//   (validate --trace, validate --candidate), or the reference backend's run, recorded once
//   before the comparison (validate --against), which keeps its decisions, q rows and forwards.
// Which of them is the "reference" and which the "candidate" is a matter of the report only:
// Roles maps them where a report entry (a divergence, a near-tie, a message) is written.
#include <string>
#include <utility>
#include <vector>

#include "validation/draft_rule.hpp"
#include "validation/observed_head.hpp"
#include "validation/observed_model.hpp"
#include "validation/run_recorder.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "traces/trace.hpp"

namespace specdec::validation {

struct LiveRun {
  RecordedRun run;                                // the trace, with exact decisions and q per step
  std::vector<ForwardRecord> target_forwards;     // forward i = step i (per-layer states when asked)
  std::vector<ForwardRecord> draft_forwards;      // the draft LM's, stamped with the step drafted
  std::vector<HeadForwardRecord> head_forwards;   // kept when the run observes its drafter's rows
  const EagleHead* head = nullptr;                // the head whose forwards were observed, if any
};

struct Recorded {
  const Trace* trace = nullptr;
  std::string name;  // backend name, "trace FILE" or "candidate FILE"
  // The reference backend's run (validate --against) only; null for a trace from disk.
  const std::vector<StepExtras>* extras = nullptr;
  const std::vector<ForwardRecord>* target_forwards = nullptr;
  const std::vector<ForwardRecord>* draft_forwards = nullptr;  // null without a draft LM
  // validate --candidate of a draft-free method: what the method's rule drafts at every step for
  // the recorded history (draft_rule.hpp); null otherwise.
  const std::vector<RuleStep>* rule = nullptr;
};

// The report's names for the two sides. validate --against and --trace: the live run is the
// candidate, the recorded side the reference. validate --candidate: the recorded trace is an
// outside engine's (the candidate), the live run the reference; margins and near-ties then come
// from the live run's rows, and the trace's drafter rows and per-layer states are checked against
// the live run's.
struct Roles {
  bool live_is_reference = false;

  template <class T> T reference(T live, T recorded) const { return live_is_reference ? std::move(live) : std::move(recorded); }
  template <class T> T candidate(T live, T recorded) const { return live_is_reference ? std::move(recorded) : std::move(live); }
};

}  // namespace specdec::validation
