#pragma once
// The drafting half of speculative decoding, behind one interface: a Proposer looks at the
// sequence so far (and the target's hidden states for it) and proposes a draft chain or tree with
// the distributions its tokens were drawn from. The decoding loop (reference/decoding/speculative)
// verifies proposals against the target without knowing which drafter made them.
#include <string>
#include <vector>

#include "reference/acceptance/draft_tree.hpp"
#include "reference/core/tensor.hpp"
#include "reference/sampling/sampling_params.hpp"

namespace specdec {

// A speculation policy's stop rule, asked by chain drafters at each depth (1-based). Stopping
// saves the drafter forwards after it. What each question may depend on keeps sampled decoding
// exact: whether to draft at a depth depends on the drafter's distribution there (its top-1
// probability), never on the token drawn from it — a draft dropped because of its own value
// would bias verification; whether to go deeper may depend on anything drafted so far.
class DraftStopRule {
 public:
  virtual ~DraftStopRule() = default;
  // Before the draft at `depth` is taken: false stops the chain without it (llama.cpp's p_min).
  virtual bool draft_at(int depth, double top_probability) const = 0;
  // After the draft at `depth`, drawn with drafter probability `confidence` where the top-1
  // probability was `top_probability`: false stops the chain after it (transformers' threshold).
  virtual bool draft_after(int depth, double confidence, double top_probability) const = 0;
};

struct DraftContext {
  // Prompt and emitted tokens. The last one ("pending") was just emitted: the target has not
  // processed it yet, so the hidden states below cover sequence[0, committed).
  const std::vector<int32_t>* sequence = nullptr;
  int committed = 0;                      // = sequence->size() − 1
  int prompt_length = 0;                  // sequence[0, prompt_length) is the prompt, the rest output
  int max_length = 0;                     // the length the sequence may reach (prompt + max new tokens)
  const Matrix* final_hidden = nullptr;   // (≥ committed, H) rows [0, committed) valid, if requested
  const Matrix* aux_hidden = nullptr;     // (≥ committed, n_aux·H) rows [0, committed) valid, if requested
  SamplingParams sampling;
  uint32_t sequence_id = 0;
  // This step's budget from the speculation policy: drafts no deeper than max_depth (0 = the
  // proposer's whole shape), and the stop rule a chain drafter asks after each draft (null: none).
  int max_depth = 0;
  const DraftStopRule* stop = nullptr;
};

// Where a draft-free drafter found a draft (Proposal::sources, one per node): the earlier
// occurrence whose continuation it copied.
struct DraftSource {
  enum class Origin { context, responses };
  Origin origin = Origin::context;  // context: this sequence (prompt + output); responses: the run's earlier responses
  int64_t position = -1;            // the copied token's index in the sequence (context) or in response `request`
  int32_t match_length = 0;         // the length of the matched suffix (n-gram) that led there
  int64_t request = -1;             // responses: the request, in the order the run started them
};

struct Proposal {
  DraftTree tree;  // over the target vocabulary; depth-1 nodes follow the pending token
  // Distributions children were drawn from (VerifyInput::draft_probs): row 0 at the pending token,
  // row 1 + n after node n. Empty when the drafter chose deterministically.
  std::vector<std::vector<double>> draft_probs;
  int drafter_forwards = 0;
  // Chain drafters asked with a stop rule: the drafter's confidence in each draft (chain order).
  std::vector<double> confidences;
  // Draft-free drafters: where each node's token came from (node order; empty for model drafters).
  std::vector<DraftSource> sources;
};

// State a method keeps across the sequences of one run (suffix decoding's tree of earlier
// responses): made once per run by the method's registry entry, shared by its sequences' proposers.
class MethodRunState {
 public:
  virtual ~MethodRunState() = default;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;
  // What the target's forwards must return for this drafter.
  virtual bool wants_final_hidden() const { return false; }
  virtual std::vector<int> wanted_aux_layers() const { return {}; }
  // The most draft nodes one proposal can hold (sizes the target's KV cache).
  virtual int max_nodes() const = 0;
  // The deepest draft of a whole proposal (DraftContext::max_depth below it drafts less): a chain's
  // K, a tree's depth.
  virtual int max_depth() const { return max_nodes(); }
  virtual Proposal propose(const DraftContext& context) = 0;
};

// How a drafter turns its logits into one drafted token at `position` under the run's sampling:
// greedy → argmax (deterministic); coupled → the coupled sample with the target's Gumbel noise
// for that position (deterministic, and equal to the target's choice whenever the two agree);
// sample → drawn from q = probabilities(logits) with the draft purpose of the random stream.
struct DraftChoice {
  int32_t token = 0;
  std::vector<double> q;  // empty unless sampled
};
// Throws specdec::Error when the drafter's logits hold a NaN or +inf (a faulty drafter: the
// decoder then falls back).
DraftChoice choose_draft_token(const float* logits, int vocab, const SamplingParams& sampling, uint32_t sequence_id,
                               uint32_t position);

// A drafter's confidence in `token`: its probability under softmax(logits) at temperature 1, with
// no truncation (what llama.cpp's p_min and Hugging Face's confidence threshold compare), in double.
double draft_confidence(const float* logits, int vocab, int32_t token);

// The depth a chain drafter of `k` drafts goes to this step (context.max_depth caps it).
int step_depth(const DraftContext& context, int k);

// The drafter's top-1 probability under softmax(logits) at temperature 1, in double.
double top_probability(const float* logits, int vocab);

}  // namespace specdec
