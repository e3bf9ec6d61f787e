#pragma once
// Replay of one step's token decisions (DESIGN.md, "Exactness"): the one place where the
// accept/reject decisions, choices and draws of a step are derived again, with their margins,
// from the target logits rows its rule read. A live step is replayed as it is recorded
// (run_recorder); a recorded step from the rows its trace keeps, with its sampled draft
// distributions q read back from its log q rows.
#include <cstdint>
#include <optional>
#include <vector>

#include "validation/decision_margin.hpp"
#include "traces/trace.hpp"

namespace specdec::validation {

// Every token decision of one step, in evaluation order. `in.target_logits` holds the step's
// rows (row 0 at the root); `in.tree` its draft (null or empty: none). Without draft nodes (a
// sequential step, the prefill, a verify of the pending token alone) it is the one decision
// sample_token makes at row 0, which is also what a verify of no nodes decides; otherwise
// verify_decisions.
std::vector<Decision> step_decisions(const VerifyInput& in);

// Sampled-draft distributions of a recorded step (from its log q rows, by node): empty for
// deterministic drafts, nothing when the rows are top-k summaries.
std::optional<std::vector<std::vector<double>>> recorded_draft_probs(const StepRecord& step);

// The decisions of a recorded step from its logits rows: full rows in every mode (step_decisions),
// top-k rows in greedy mode (the top-k choice along the match path). Nothing when the trace
// cannot give them: no rows, top-k rows outside greedy, or a sampled draft kept as top-k q rows.
std::optional<std::vector<Decision>> recorded_step_decisions(const StepRecord& step, const SamplingParams& sampling,
                                                             uint32_t sequence);

}  // namespace specdec::validation
