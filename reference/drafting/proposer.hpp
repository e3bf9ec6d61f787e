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

struct DraftContext {
  // Prompt and emitted tokens. The last one ("pending") was just emitted: the target has not
  // processed it yet, so the hidden states below cover sequence[0, committed).
  const std::vector<int32_t>* sequence = nullptr;
  int committed = 0;                      // = sequence->size() − 1
  const Matrix* final_hidden = nullptr;   // (≥ committed, H) rows [0, committed) valid, if requested
  const Matrix* aux_hidden = nullptr;     // (≥ committed, n_aux·H) rows [0, committed) valid, if requested
  SamplingParams sampling;
  uint32_t sequence_id = 0;
};

struct Proposal {
  DraftTree tree;  // over the target vocabulary; depth-1 nodes follow the pending token
  // Distributions children were drawn from (VerifyInput::draft_probs): row 0 at the pending token,
  // row 1 + n after node n. Empty when the drafter chose deterministically.
  std::vector<std::vector<double>> draft_probs;
  int drafter_forwards = 0;
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
DraftChoice choose_draft_token(const float* logits, int vocab, const SamplingParams& sampling, uint32_t sequence_id,
                               uint32_t position);

}  // namespace specdec
