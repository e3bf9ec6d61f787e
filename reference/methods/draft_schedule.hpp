#pragma once
// The drafter forwards of one decoding step, as a method's registry entry describes them: how many
// forwards and how many rows (tokens) each feeds. The simulator prices exactly this list, and the
// method tests count a proposer's real forwards against it, so the two cannot drift apart.
#include <vector>

#include "reference/methods/method_spec.hpp"

namespace specdec {

// What one step drafts, in the terms the schedule needs.
struct StepShape {
  enum class Kind { chain, static_tree, dynamic_tree };
  Kind kind = Kind::chain;
  int k = 1;                            // chain: drafts per step
  std::vector<int> nodes_per_depth;     // static tree: (D) nodes at depth 1..D
  std::vector<int> expanded_per_depth;  // static tree: (D) of them, those with children
  int depth = 0;                        // dynamic tree: expansion depth
  int top_k = 0;                        // dynamic tree: frontier width
  // Deepest draft of the step (chain: K; static tree: D; dynamic: depth + 1).
  int max_depth() const;
};

struct DraftSchedule {
  std::vector<double> rows;  // (F) rows fed to forward f of the step; rows[0] re-reads the last step's tokens
  int forwards() const { return static_cast<int>(rows.size()); }
};

// The rows of a step's first forward: what the previous step emitted, as the drafter re-reads it.
// `emitted` counts accepted drafts plus the bonus token; `all_accepted` is 1 when every draft of
// that step was accepted (0 otherwise; a probability when the simulator takes expectations).
struct CatchUp {
  double emitted = 1;
  double all_accepted = 0;
};

// The schedule of a draft-free method: no drafter forward in any step.
DraftSchedule no_drafter_forwards(const StepShape& shape, const CatchUp& catch_up);

// The step shape of a method spec (checked here; a static tree's choices are read: inline JSON, a
// file or a name).
StepShape step_shape(const MethodSpec& spec);

}  // namespace specdec
