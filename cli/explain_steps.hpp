#pragma once
// What `specdec explain` shows, as data: every step of a decoding run with the numbers behind each
// decision — the target's p and the draft's q at every point, the residuals an acceptance test
// used after earlier siblings were rejected, the uniforms drawn, the Gumbel scores of coupled
// sampling, the token that ended the step and whether the step was cut by --max-new-tokens or EOS.
// The text and the HTML views are both rendered from these records. The numbers are recomputed
// from the step's logits and checked against the acceptor's own record (VerifyResult), so what
// is shown is what was used.
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "reference/decoding/decode_observer.hpp"
#include "reference/sampling/sampling_params.hpp"

namespace specdec::cli {

inline constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

struct ProbEntry {
  int32_t token = 0;
  double p = 0;      // target probability (the displayed distribution)
  double q = kNone;  // draft probability; NaN when the drafter chose deterministically
};

// One acceptance test of one draft node at its parent's point.
struct NodeTest {
  int node = 0;
  int32_t token = 0;
  bool accepted = false;
  double p = 0;            // target p(x) at the point
  double q = kNone;        // draft q(x) at the point (NaN: deterministic draft, q one-hot)
  // Sample mode.
  std::vector<int32_t> removed;  // earlier siblings rejected at this point, in order
  double p_used = kNone;   // the residual p'(x) the test used (= p when nothing was removed)
  double q_used = kNone;   // the renormalised q'(x) (draft distributions only)
  double accept_prob = kNone;  // min(1, p'/q'), or p' for a deterministic draft
  double u = kNone;        // the uniform drawn
  // Greedy and coupled: the target's own choice at the point.
  int32_t choice = -1;
  double choice_p = kNone;
  double score = kNone, choice_score = kNone;  // coupled: logit/T + Gumbel noise of x and of the choice
};

// A point children were drafted from: the root (node −1) or a draft node.
struct Point {
  int node = -1;
  int depth = 0;             // of the tokens drafted here (1 at the root)
  int32_t position = 0;      // absolute position of those tokens
  bool reached = false;      // the accepted path got here
  std::vector<ProbEntry> top;  // the most likely tokens under p, with their q
  std::vector<NodeTest> tests;
};

struct ScoreEntry {
  int32_t token = 0;
  double score = 0;   // logit/T + Gumbel
  double gumbel = 0;  // the noise alone
  double p = 0;
};

// The token that ends a step: bonus (after a leaf), correction (no child accepted), or for
// sequential decoding the target's token.
struct FinalToken {
  int32_t token = 0;
  std::string kind;       // "bonus" | "correction" | "target"
  int point = -1;         // the node it follows (−1: the root)
  int32_t position = 0;
  double p = 0;           // its probability under the distribution it came from
  double u = kNone;       // sample mode: the uniform drawn
  double score = kNone;   // coupled: its Gumbel score
  std::string from;       // "p", "residual", "argmax", "gumbel-argmax"
  std::vector<ProbEntry> distribution;  // sample mode: the top of the distribution drawn from
  std::vector<ScoreEntry> scores;       // coupled: the top Gumbel scores
};

// Draft-free drafters (n-gram lookup, suffix decoding): where a step's drafts were copied from.
// The first node's source locates the match; `window` is the history around its earlier
// occurrence (a few tokens before the matched n-gram, the n-gram, what followed and was copied).
struct SourceToken {
  int32_t token = 0;
  int64_t position = 0;
  std::string role;  // "before" | "match" (the earlier occurrence of the matched n-gram) | "copied" | "after"
};

struct DraftSources {
  std::vector<DraftSource> nodes;  // one per draft node, node order
  int64_t history = 0;             // tokens before the step: the prompt and the output so far
  std::string origin;              // of the first node: "context" | "responses"
  int32_t match_length = 0;        // n: the length of the matched suffix
  int64_t copied_from = -1;        // the first node's position (in the history, or in response `request`)
  int64_t match_start = -1;        // context: where the earlier occurrence of the n-gram starts (-1 unknown)
  int64_t request = -1;            // responses: the earlier request
  std::vector<int32_t> suffix;     // the history's last n tokens, the suffix that was matched
  std::vector<SourceToken> window; // context, match known: the history around the earlier occurrence
  bool empty() const { return nodes.empty(); }
};

struct StepRecord {
  int index = 0;
  bool sequential = false;     // a prefill or sequential token (no draft)
  int32_t position = 0;        // of the first token this step emits
  int32_t pending = -1;        // the token the drafts follow
  std::vector<int32_t> tokens, parents, depths;  // the draft tree
  std::vector<std::string> status;  // per node: accepted | rejected | unreached | discarded
  bool chain = true;
  std::vector<Point> points;   // index r: row r of the target logits (root, then after node r − 1)
  FinalToken final;
  std::vector<int32_t> emitted;  // what the step appended to the output
  int produced = 0;              // what the step would have appended without a cut
  std::string cut;               // "" | "max-new-tokens" | "eos"
  int drafter_forwards = 0;
  // The cost of the step as run: the rows of its one target forward (the prefill: the prompt; a
  // verify: the pending token and every draft node) and the wall times measured around the
  // drafting and the target forward (this machine, this run).
  int target_rows = 0;
  int64_t draft_ns = 0, target_ns = 0;
  DraftSources sources;          // draft-free drafters; empty otherwise (and when nothing was drafted)
  // Running counters after this step.
  int total_tokens = 0, total_target_forwards = 0, total_drafter_forwards = 0;
  int full_steps = 0, full_step_tokens = 0;  // speculative steps not cut, and what they emitted
  bool complete() const { return cut.empty(); }
};

struct ExplainRun {
  std::string model;           // the target's checkpoint
  std::string method;          // the registry name: sequential, draft, eagle, ..., ngram, suffix, ...
  bool draft_free = false;     // the method drafts from the token history (n-gram lookup, suffix decoding)
  std::string method_json;
  std::string shape;           // chain | tree
  SamplingParams sampling;
  int max_new_tokens = 0;
  std::vector<int32_t> prompt;
  std::vector<StepRecord> steps;
  std::vector<int32_t> output;
  std::string stop_reason;
  int drafted_full = 0, accepted_full = 0;  // over complete speculative steps
};

// Builds the records as the run reports its steps; `on_step` (when set) sees each finished record.
class ExplainRecorder final : public DecodeObserver {
 public:
  // `is_eos` tells a cut at EOS from one at max_new_tokens; `top_n` entries of each distribution
  // are kept.
  ExplainRecorder(ExplainRun& run, const SamplingParams& sampling, uint32_t sequence, std::function<bool(int32_t)> is_eos,
                  int top_n = 8);
  void on_prefill(const std::vector<int32_t>& prompt, int64_t prefill_ns) override;
  void on_sequential_step(const SequentialStep& s) override;
  void on_speculative_step(const SpeculativeStep& s) override;
  void on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) override;

  std::function<void(const StepRecord&)> on_step;
  std::function<void()> on_prompt, on_done;

 private:
  void finish_step(StepRecord r);
  ExplainRun& run_;
  SamplingParams sampling_;
  uint32_t sequence_;
  std::function<bool(int32_t)> is_eos_;
  int top_n_;
};

// The distribution shown for the target at a point: the sampling distribution, or under greedy
// decoding the plain softmax (the one-hot would say nothing).
std::vector<double> display_probabilities(const float* logits, int vocab, const SamplingParams& sampling);

}  // namespace specdec::cli
