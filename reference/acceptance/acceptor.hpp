#pragma once
// Verification of a drafted chain or tree against the target: which draft nodes are accepted and
// which token follows them. A pluggable interface in the spirit of transformers-neuronx's
// TokenAcceptor; decoding algorithms call it and never decide acceptance themselves.
#include <memory>
#include <string>
#include <vector>

#include "reference/acceptance/chance.hpp"
#include "reference/acceptance/draft_tree.hpp"
#include "reference/core/tensor.hpp"
#include "reference/sampling/sampling_params.hpp"

namespace specdec {

struct VerifyInput {
  const DraftTree* tree = nullptr;
  // (N + 1, V) target logits: row 0 at the root (it predicts depth-1 tokens), row 1 + n after node n.
  const Matrix* target_logits = nullptr;
  // Instead, for greedy sampling with an acceptor that takes_argmax: the target's choice at each
  // row (N + 1; ForwardRequest::argmax_only), and the target vocabulary to check the tree against.
  const std::vector<int32_t>* target_argmax = nullptr;
  int vocab = 0;
  // Draft distributions over the target vocabulary at each point children were drafted from:
  // row 0 at the root, row 1 + n after node n; each (V). Children of a point were drawn from its
  // row, without replacement when there are several. Empty: the drafter chose deterministically
  // (argmax / top-k), and the children are candidates, i.e. one-hot q.
  const std::vector<std::vector<double>>* draft_probs = nullptr;
  SamplingParams sampling;
  uint32_t sequence = 0;
  int32_t root_position = 0;  // absolute position of the depth-1 tokens
};

struct VerifyResult {
  std::vector<int32_t> accepted_nodes;  // root to leaf
  std::vector<int32_t> emitted;         // the accepted nodes' tokens, then the next token
  int32_t bonus_token = -1;             // the next token when the accepted path ends at a leaf, else −1
  std::vector<uint8_t> decisions;       // each acceptance test in evaluation order: 1 accept, 0 reject
  std::vector<int32_t> decision_nodes;  // the draft node each decision judged
  std::vector<double> accept_probs;     // rejection sampling: min(1, p(x)/q(x)) each test used, with p
                                        // and q the residuals after earlier siblings; empty for match
  std::vector<RandomDraw> draws;        // uniforms used, with their counters, in draw order
};

class TokenAcceptor {
 public:
  virtual ~TokenAcceptor() = default;
  virtual std::string name() const = 0;
  virtual VerifyResult verify(const VerifyInput& input) const = 0;
  // Whether, under `sampling`, the target's argmax at each row is all verify needs of the logits.
  virtual bool takes_argmax(const SamplingParams& sampling) const { (void)sampling; return false; }
};

// Greedy and coupled sampling: at each node the target's own choice is sample_token(row, position)
// (argmax, or argmax of logits/T + Gumbel noise keyed by the position); a child is accepted iff it
// is that token, and the next token is the target's choice where the walk stops. Reproduces
// sequential decoding token for token.
class MatchAcceptor final : public TokenAcceptor {
 public:
  std::string name() const override { return "match"; }
  VerifyResult verify(const VerifyInput& input) const override;
  // Greedy: the choice is the argmax.
  bool takes_argmax(const SamplingParams& sampling) const override { return sampling.mode == SamplingParams::Mode::greedy; }
};

// Lossless speculative sampling (sample mode). At each accepted point with target distribution p
// and draft distribution q, the children x are tried in order: accept with probability
// min(1, p(x)/q(x)); on rejection p ← norm(max(0, p − q)) and x is removed from q (renormalised).
// A chain is Leviathan/Chen; several children are SpecInfer/EAGLE's multi-candidate recursive
// rejection; deterministic drafts use one-hot q (accept with p(x), else zero x in p). When no
// child is accepted the next token is drawn from the residual p; after a leaf, from p (bonus).
class RejectionAcceptor final : public TokenAcceptor {
 public:
  std::string name() const override { return "rejection"; }
  VerifyResult verify(const VerifyInput& input) const override;
  // The same rule with the random choices taken from `chance` (used by the exactness tests).
  static VerifyResult verify_with(const VerifyInput& input, Chance& chance);
};

// MatchAcceptor for greedy and coupled sampling, RejectionAcceptor for sample mode.
std::unique_ptr<TokenAcceptor> default_acceptor(const SamplingParams& sampling);

}  // namespace specdec
