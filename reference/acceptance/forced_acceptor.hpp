#pragma once
// Forced acceptance for benchmarking: accept drafts at a chosen rate instead of by comparing them
// with the target, so that step cost can be measured at any acceptance on any model (random
// weights included). The three forms are the serving engines' knobs, with the engines' semantics:
//   rates=p1,p2,...  vLLM rejection_sample_method "synthetic" with synthetic_acceptance_rates
//                    (per-position UNCONDITIONAL rates p_i = P(the first i drafts all accepted)).
//   al=L             the minimum-variance schedule for a target acceptance length L (bonus
//                    included) that vLLM (synthetic_acceptance_length), SGLang
//                    (SGLANG_SIMULATE_ACC_LEN, "match-expected") and TensorRT-LLM
//                    (TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS = L - 1) all implement: the step
//                    accepts floor(L - 1) drafts, or one more with probability frac(L - 1),
//                    capped at K.
//   accepted=X       TensorRT-LLM's TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS X (accepted drafts,
//                    bonus excluded, a real number): the same as al=X+1.
// The emitted text is NOT the target's: accepted drafts are emitted whatever the target thinks of
// them (docs/benchmarks.md, "Forced acceptance").
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/acceptance/acceptor.hpp"

namespace specdec {

struct ForcedAcceptance {
  enum class Kind {
    rates,              // vLLM synthetic_acceptance_rates: unconditional per-position rates p_1..p_n
    acceptance_length,  // a target mean tokens per step L (bonus included), minimum-variance schedule
    accepted,           // TensorRT-LLM's forced accepted drafts X (bonus excluded): al = X + 1
  };
  Kind kind = Kind::rates;
  // kind rates: p_i = P(the first i drafts are all accepted), each in [0, 1], non-increasing.
  // Positions beyond the list are never accepted (p = 0): give K rates, as vLLM requires.
  std::vector<double> rates;
  double acceptance_length = 1;  // kind acceptance_length: L in [1, 1e6]
  double accepted = 0;           // kind accepted: X in [0, 4096], fractions allowed

  // The mean number of accepted drafts per step the al/accepted forms aim at: L - 1 or X
  // (kind rates: 0). The step accepts min(K, floor(m) + [u < frac(m)]) drafts.
  double target_drafts() const;
  // The CONDITIONAL rate c_d = p_d / p_{d-1} (p_0 = 1; 0 when p_{d-1} = 0) at depth d >= 1 of a
  // first-child path of `depth` drafts: the probability that the depth-d draft is accepted given
  // that its parent was. rates: from the list (0 beyond it); al/accepted: the minimum-variance
  // schedule, m = target_drafts(): 1 for d <= floor(m), frac(m) for d = floor(m) + 1, 0 beyond.
  // 0 for d > depth.
  double rate(int d, int depth) const;
  // The UNCONDITIONAL rate p_d = P(the first d drafts are all accepted) on a first-child path of
  // `depth` drafts (0 for d > depth); p_0 = 1.
  double unconditional_rate(int d, int depth) const;
  // The command-line form: "rates=0.9,0.54", "al=3.2", "accepted=1.5" (numbers round-trip exactly).
  std::string to_string() const;
  // Throws specdec::Error naming the bad value and the accepted range.
  void validate() const;

  bool operator==(const ForcedAcceptance&) const = default;
};

// Parses "rates=P1,P2,..." (each finite, in [0, 1], non-increasing), "al=LENGTH" (finite, in
// [1, 1e6]) or "accepted=X" (finite, in [0, 4096], fractions allowed). Throws specdec::Error
// saying what was wrong and what is expected.
ForcedAcceptance parse_forced_acceptance(const std::string& text);

// The expected tokens per step, bonus/correction included, on a chain of K drafts:
// 1 + sum_{i=1..K} unconditional_rate(i, K). rates: 1 + p_1 + ... + p_min(K, n);
// al: min(L, K + 1); accepted: min(X + 1, K + 1).
double expected_acceptance_length(const ForcedAcceptance& forced, int K);

// JSON form: {"kind": "rates", "rates": [0.9, 0.54]} | {"kind": "al", "al": 3.2} |
// {"kind": "accepted", "accepted": 1.5}, plus "spec": the command-line form (ignored when read).
// from_json validates and throws specdec::Error.
void to_json(nlohmann::json& j, const ForcedAcceptance& forced);
void from_json(const nlohmann::json& j, ForcedAcceptance& forced);

// Walks the first-child path from the root: at each point only the first child is tried (other
// siblings of a tree are never accepted); K is the depth of that first-child path in this step's
// tree. The number of accepted drafts is decided as the engines decide it:
//   rates: the child at depth d <= n (n = the list's length) is accepted iff
//     uniform(seed, sequence, position of the child, RandomPurpose::forced, 0) < rate(d, K), the
//     walk stopping at the first rejection (vLLM: one uniform per position); a child beyond the
//     list is rejected without a draw.
//   al / accepted: one draw per step and sequence (like TensorRT-LLM's per-request draw; SGLang
//     draws once per batch, shared by all its requests): with m = target_drafts(), the step
//     accepts min(K, floor(m) + [u < frac(m)]) drafts, u = uniform(seed, sequence, root position,
//     RandomPurpose::forced, 0); no draw when the count is certain (frac(m) = 0 or floor(m) >= K).
// Emitted: the accepted drafts' tokens, then the target's own choice at the stop point (greedy:
// the argmax, else sample_token with the run's sampling at that position), the bonus token when
// the stop is a leaf. Every decision is a pure function of (seed, sequence, positions, K):
// deterministic, and the same on every backend.
class ForcedAcceptor final : public TokenAcceptor {
 public:
  // Throws specdec::Error if `forced` is invalid.
  explicit ForcedAcceptor(ForcedAcceptance forced);

  std::string name() const override { return "forced"; }
  VerifyResult verify(const VerifyInput& input) const override;
  bool takes_argmax(const SamplingParams& sampling) const override { return sampling.mode == SamplingParams::Mode::greedy; }
  const ForcedAcceptance& forced() const { return forced_; }

 private:
  ForcedAcceptance forced_;
};

}  // namespace specdec
