#pragma once
// One step of the live run against the same step of the recorded side, in the order the step was
// computed: its position, the drafter (draft LM forwards, an outside engine's drafter rows, the
// draft, its q rows), the target logits rows, the token decisions, the hidden states and the
// remaining exact step fields. The outcome: equal, a near-tie to force, or the first divergence.
// step_comparison.cpp holds the target side and the step order; draft_comparison.cpp the draft
// side.
#include <optional>
#include <vector>

#include "validation/forcing.hpp"
#include "validation/quantity_stats.hpp"
#include "validation/sides.hpp"
#include "validation/validator.hpp"

namespace specdec::validation {

struct StepOutcome {
  enum class Kind { equal, near_tie, fail } kind = Kind::equal;
  NearTie tie;
  bool force_draft = false;  // near-tie of the drafter (else of the target's decision)
  Divergence failure;
};

class StepComparer {
 public:
  StepComparer(const ValidationSetup& setup, const TolerancePolicy& policy, const LiveRun& live, const Recorded& recorded,
               Roles roles, const Forcing& forcing, QuantityStats& stats)
      : setup_(setup), policy_(policy), live_(live), recorded_(recorded), roles_(roles), forcing_(forcing), stats_(stats) {}

  // Step s (present on both sides), with a failure of the target's forward localised to the
  // first layer that departs where the recorded trace keeps per-layer states.
  StepOutcome compare(int s);

 private:
  StepOutcome compare_step(int s);

  // step_comparison.cpp: the target side.
  void localise(int s, Divergence& d) const;
  std::optional<StepOutcome> compare_target_logits(int s, const StepRecord& live, const StepRecord& rec, bool logits_forced,
                                                   std::vector<double>& row_error, std::optional<Divergence>& tolerance);
  StepOutcome decision_divergence(int s, const StepRecord& live, const StepRecord& rec, const std::vector<Decision>& ld,
                                  const std::vector<Decision>& rd, size_t i, const std::vector<double>& row_error,
                                  const std::optional<Divergence>& tolerance, bool logits_forced);
  std::optional<StepOutcome> compare_hidden(int s);
  StepOutcome compare_fields(int s, const StepRecord& live, const StepRecord& rec);
  // The reference's own decisions at step s with their margins: the live run's, or the reference
  // backend's run; null for a trace from disk.
  const std::vector<Decision>* reference_decisions(int s) const;

  // draft_comparison.cpp: the draft side.
  std::optional<StepOutcome> compare_draft_rule(int s, const StepRecord& rec);
  std::optional<StepOutcome> compare_draft_forwards(int s);
  std::optional<StepOutcome> compare_drafter_rows_of(int s, const StepRecord& live, const StepRecord& rec, bool drafts_differ);
  StepOutcome draft_divergence(int s, const StepRecord& live, const StepRecord& rec);
  std::optional<StepOutcome> compare_draft_probs(int s, const StepRecord& live, const StepRecord& rec);

  StepOutcome fail(const std::string& what, const std::string& detail) const;
  static StepOutcome fail_with(const Divergence& d);
  static StepOutcome near_tie(const NearTie& t, bool force_draft);
  Divergence tolerance_failure(const std::string& what, int row, double value, double bound, const std::string& measure) const;

  const ValidationSetup& setup_;
  const TolerancePolicy& policy_;
  const LiveRun& live_;
  const Recorded& recorded_;
  const Roles roles_;
  const Forcing& forcing_;
  QuantityStats& stats_;
  Divergence base_;  // the step's divergence before what and detail: step, position, emitted tokens
  bool drafter_rows_agree_ = false;  // this step's recorded drafter rows agree with the live run's
  double drafter_margin_ = kUnknown;
};

}  // namespace specdec::validation
