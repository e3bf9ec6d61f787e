#pragma once
// Typical acceptance (Medusa, Cai et al. 2024, arXiv 2401.10774; FasterDecoding/Medusa
// `medusa/model/utils.py`, evaluate_posterior with posterior_threshold / posterior_alpha).
// LOSSY BY DESIGN: a draft is accepted when the target finds it plausible enough, not with the
// probability that would keep the target's distribution, so the output is NOT a sample of the
// target model's distribution and is never claimed exact (docs/exactness.md, "Lossy by design:
// typical acceptance").
//
// Terms (defined once, used below):
//   point        a place drafts are verified from: the root (the last emitted token) or a draft
//                node; its target row is row 0 for the root, row 1 + n after node n.
//   p            the target distribution at a point: probabilities(row, V, sampling), the very
//                distribution the run's sampler draws from (temperature, then top-k, then top-p;
//                reference/sampling/sampler.hpp). Medusa uses softmax(logits / T) alone; with
//                top-k = 0 and top-p = 1 the two are the same.
//   H(p)         Medusa's entropy, -sum_v p(v) * log(p(v) + 1e-5), summed in double in index order.
//                NOTE the + 1e-5 inside the log: it is Medusa's, kept on purpose, so H is slightly
//                below the true entropy (a masked token, p = 0, adds exactly 0).
//   threshold    tau(p) = min(epsilon, delta * exp(-H(p))).
//   epsilon      Medusa's posterior_threshold, default 0.09 (a hard probability floor).
//   delta        Medusa's posterior_alpha, default 0.3 (scale of the entropy-adaptive floor; Medusa
//                recommends sqrt(epsilon)). Medusa's medusa_generate passes 0.09 / 0.3; the
//                keyword defaults of utils.py's generate_candidates / evaluate_posterior read
//                0.3 / 0.09 (swapped) and are not what its generation uses.
//   accepted     a draft node x whose parent point has distribution p is accepted iff its parent
//                is the root or accepted, and p(x) > tau(p) (strict, as Medusa's `>`).
//   log-likelihood of a node: sum of log p(x) over the nodes of its root-to-node path (no 1e-5).
//
// Shapes: N draft nodes, V target vocabulary. target_logits (N + 1, V); per point p (V), H and tau
// scalars; accepted_nodes (A) root to leaf, A = depth of the chosen node (0 if none); emitted
// (A + 1). draft_probs (q) are not read: Medusa's rule looks at the target alone.
//
// The step:
//   1. Test the nodes in node order (parents precede children), each only if its parent point is
//      the root or an accepted node: one decision per test (decisions / decision_nodes), so every
//      root-to-node path is accepted up to its first rejection. A node under a rejected one is
//      never tested.
//   2. The chosen path ends at the accepted node of greatest depth; ties go to the larger
//      log-likelihood (Medusa: argmax of sum log candidates_prob over the accepted prefix), then to
//      the lower node index ("the earlier node"; torch.argmax keeps the first maximum). No accepted
//      node: the path is empty (Medusa: accept_length 0, candidate 0).
//   3. The next token, at the point the chosen path ends (absolute position root_position + A):
//      what the target's own sampler draws there, as the other acceptors draw their
//      correction/bonus token: sample mode, sample_from(p, uniform(seed, sequence, position,
//      RandomPurpose::sample, 0)) (recorded in `draws`); coupled, sample_token (Gumbel-max keyed by
//      the position). It is the bonus token when that point is a leaf. Medusa itself samples this
//      token from a typical-TRUNCATED distribution (get_typical_one_token: tokens with p < tau
//      masked, then multinomial); this acceptor does not truncate, so a step whose drafts are all
//      rejected emits exactly what sequential decoding would have emitted at that position.
//   accept_probs is left empty (no probabilistic test is made).
//
// Greedy sampling is REFUSED (verify throws): at temperature 0 Medusa's evaluate_posterior is exact
// matching against the argmax, which is MatchAcceptor, the default rule. Falling back to it
// silently would label an exact run "typical, lossy" and make ε / δ look as if they did something;
// a clear error says to use the default rule or a sampling mode instead.
//
// Deterministic: a pure function of (logits, tree, sampling incl. seed, sequence, root_position).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/acceptance/acceptor.hpp"

namespace specdec {

struct TypicalAcceptance {
  double epsilon = 0.09;  // Medusa posterior_threshold: finite, in (0, 1]
  double delta = 0.3;     // Medusa posterior_alpha: finite, in (0, 1e3]

  // The command-line form "epsilon=0.09,delta=0.3" (numbers round-trip exactly).
  std::string to_string() const;
  // Throws specdec::Error naming the bad value and the accepted range.
  void validate() const;

  bool operator==(const TypicalAcceptance&) const = default;
};

// Parses "epsilon=E,delta=D": either key optional (the default stays), in any order, each at most
// once; "" gives the defaults. Throws specdec::Error saying what was wrong and what is expected.
TypicalAcceptance parse_typical_acceptance(const std::string& text);

// Medusa's entropy of p: -sum_v p[v] * log(p[v] + 1e-5), in double, index order.
double medusa_entropy(const std::vector<double>& p);
// The acceptance threshold at a point with distribution p: min(epsilon, delta * exp(-medusa_entropy(p))).
double typical_threshold(const std::vector<double>& p, const TypicalAcceptance& params);

// JSON form: {"epsilon": 0.09, "delta": 0.3, "spec": "epsilon=0.09,delta=0.3"} ("spec" ignored
// when read). from_json: either number optional, unknown keys are errors, the result validated;
// throws specdec::Error.
void to_json(nlohmann::json& j, const TypicalAcceptance& params);
void from_json(const nlohmann::json& j, TypicalAcceptance& params);

// The rule above. Sample and coupled sampling only; greedy throws (see above).
class TypicalAcceptor final : public TokenAcceptor {
 public:
  // Throws specdec::Error if `params` is invalid.
  explicit TypicalAcceptor(TypicalAcceptance params = {});

  std::string name() const override { return "typical"; }
  VerifyResult verify(const VerifyInput& input) const override;
  bool takes_argmax(const SamplingParams& sampling) const override { (void)sampling; return false; }
  const TypicalAcceptance& params() const { return params_; }

 private:
  TypicalAcceptance params_;
};

}  // namespace specdec
