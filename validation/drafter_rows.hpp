#pragma once
// The drafter's inputs and outputs of one step as rows (traces/SCHEMA.md, "Drafter inputs and
// outputs"), from a trace or from a live run's observed drafter forwards, and their comparison:
// what tells a drafter near-tie (same inputs, same outputs within tolerance, a different token)
// from a drafter bug (its outputs depart while its inputs agree) or from wrong inputs (the
// features an engine fed its drafter, its tokens or positions).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "validation/observed_head.hpp"
#include "validation/observed_model.hpp"
#include "validation/tolerance_policy.hpp"
#include "validation/validation_report.hpp"
#include "traces/trace.hpp"

namespace specdec::validation {

struct DrafterRow {
  int call = 0;             // which drafter forward of the step
  int32_t token = -1;       // target-vocabulary id fed in
  int64_t position = -1;
  const float* features = nullptr;  // (feature_width) or null
  int feature_width = 0;
  bool projected = false;   // a fed-back hidden state that skipped fc (its first H columns count)
  const float* hidden = nullptr;    // (hidden_width) or null
  int hidden_width = 0;
  const float* logits = nullptr;    // (vocab) over the drafter's output vocabulary, or null
  int vocab = 0;
};

// The first draft node (in tree order) where two steps' drafts differ in token or parent; the
// smaller draft's size when one draft extends the other.
std::size_t first_differing_node(const StepRecord& a, const StepRecord& b);

// Step `step`'s rows of a trace (empty when it records no drafter inputs there).
std::vector<DrafterRow> trace_drafter_rows(const Trace& trace, const StepRecord& step);
// Step `step`'s rows of a live run: its head forwards, else its draft LM forwards (tokens,
// positions and logits; a draft LM has no features). Rows without returned logits have none.
std::vector<DrafterRow> live_drafter_rows(int step, const std::vector<HeadForwardRecord>& head,
                                          const std::vector<ForwardRecord>& draft_lm);

struct DrafterMismatch {
  std::string what;       // "drafter inputs" | "drafter hidden" | "drafter logits"
  int row = -1;           // index into the candidate's rows of the step
  int call = -1;          // the candidate's drafter forward of that row
  int64_t position = -1;
  double value = kUnknown, bound = kUnknown;
  std::string detail;     // one line, naming the row, its forward, token and position
};

struct DrafterComparison {
  std::optional<DrafterMismatch> mismatch;
  // Candidate rows paired with a reference row and compared (the failing one included), and of
  // those the rows within tolerance. Rows after the comparison stopped (a mismatch, or the first
  // row fed a token of the candidate's own diverged draft) are neither.
  int rows_compared = 0;
  int rows_passed = 0;
  int unpaired = 0;  // candidate rows without a counterpart, passed over because the drafts agree
};

// Each candidate row is paired with the reference's first unpaired row fed the same token at the
// same position (engines may schedule their drafter forwards differently), and the pair compared:
// features and hidden states under policy.hidden_nmse, logits under policy.logits_nmse (where
// both sides have them). `diverged_tokens`: the candidate's drafted tokens from the first node
// where the drafts differ (null when they agree). When the drafts agree an unpaired row is passed
// over; when they differ it fails (the same inputs cannot be shown), unless it is fed a token of
// the diverged draft, where the runs part and the comparison stops. `record(quantity, value,
// where)` receives every measurement.
DrafterComparison compare_drafter_rows(const std::vector<DrafterRow>& candidate, const std::vector<DrafterRow>& reference,
                                       const TolerancePolicy& policy, const std::vector<int32_t>* diverged_tokens,
                                       const std::function<void(const std::string&, double, const std::string&)>& record);

}  // namespace specdec::validation
