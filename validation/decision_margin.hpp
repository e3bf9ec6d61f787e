#pragma once
// The token decisions of one decoding step, each with how close it came to flipping (its
// margin), so that a decision a backend makes differently can be judged: a near-tie that the
// allowed logit error explains, or a real divergence. The decisions are those of the real rules
// (sample_token, MatchAcceptor, RejectionAcceptor), replayed with the same keyed uniforms.
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "reference/acceptance/acceptor.hpp"
#include "reference/acceptance/draft_tree.hpp"
#include "reference/sampling/sampling_params.hpp"

namespace specdec::validation {

enum class DecisionKind {
  choice,  // greedy / coupled: the target's token at a row (argmax of logits, or of logits/T + Gumbel)
  test,    // sample mode: an acceptance test of a draft node (u < min(1, p/q))
  draw,    // sample mode: a token drawn by inverse CDF (sequential sample, residual, bonus)
};
// "choice" | "test" | "draw"
std::string to_string(DecisionKind kind);

struct Decision {
  DecisionKind kind = DecisionKind::choice;
  int row = 0;             // target logits row read: 0 at the root / prefill, 1 + n after node n
  int node = -1;           // test: the draft node judged
  int32_t position = 0;    // absolute position of the token decided
  int32_t token = -1;      // choice / draw: the token; test: the judged node's token
  bool accepted = false;   // test only
  int32_t runner_up = -1;  // the token a flip would give (choice: second best; draw: the neighbour
                           // across the nearer CDF boundary); -1 when there is none
  // Distance to flipping: choice in logit units, test and draw in probability units. NaN when
  // unknown (a top-k trace row cannot give it outside greedy).
  double margin = std::numeric_limits<double>::infinity();

  // Same outcome (kind, row, node, token, accepted); margins and runners-up are not compared.
  bool same_outcome(const Decision& other) const;
  // "choice at row 2 (position 17): token 40" / "test of node 3 (token 57): accepted"
  std::string describe() const;
};

// The token sample_token picks from `row` at `position`, with its margin.
Decision token_decision(const float* row, int vocab, const SamplingParams& sampling, uint32_t sequence,
                        int32_t position);

// The greedy choice of a top-k summary row (ids by descending logit): ids[0], margin
// values[0] − values[1] (infinite when k = 1 and V = 1, NaN when k = 1 < V).
Decision topk_choice(const std::vector<int32_t>& ids, const std::vector<float>& values, int vocab, int32_t position);

// The choices along the path a match-mode verify takes through `tree`: at each point, the root
// first, the decision decide(row, position) makes (row 1 + point, position root_position + the
// point's depth), then on to the child holding the chosen token, until no child holds it.
std::vector<Decision> match_path_decisions(const DraftTree& tree, int32_t root_position,
                                           const std::function<Decision(int row, int32_t position)>& decide);

// Every decision of a verify step, in evaluation order: match mode (greedy, coupled) gives one
// choice per visited point; sample mode gives the acceptance tests and the final draw.
std::vector<Decision> verify_decisions(const VerifyInput& input);

}  // namespace specdec::validation
