#pragma once
// Acceptance models: how many tokens one verification step emits on average.
//
// Throughout the simulator "tokens per step" (AL, τ) counts the bonus/correction token, so plain
// decoding has AL = 1.00 and a chain of K drafts at most K + 1.
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace specdec::sim {

class AcceptanceModel {
 public:
  virtual ~AcceptanceModel() = default;
  // Expected tokens emitted per step (AL) with a chain of k drafts; k = 0 gives 1.
  virtual double expected_tokens(int k) const = 0;
  // For trees: probability that the rank-`rank` candidate at `depth` (1-based) is accepted given
  // that its parent was accepted and all higher-ranked siblings were rejected.
  virtual double conditional(int depth, int rank) const = 0;
  // Largest chain length / tree depth this model can answer.
  virtual int max_k() const { return 1 << 20; }
  // Whether expected_tokens(k) has an answer (a measured table answers only its listed K).
  virtual bool answers(int k) const { return k >= 0 && k <= max_k(); }
  virtual std::string describe() const = 0;

 protected:
  void check_k(int k) const;
};

using AcceptancePtr = std::shared_ptr<const AcceptanceModel>;

// i.i.d. acceptance rate α (Leviathan et al.): AL(K) = (1 − α^{K+1}) / (1 − α), K + 1 at α = 1.
// In trees every candidate is accepted with probability α given its parent.
AcceptancePtr iid_acceptance(double alpha);
// Per-position conditional acceptance a_i = P(draft i accepted | drafts < i accepted):
// AL(K) = 1 + Σ_{i≤K} Π_{j≤i} a_j. Answers K up to a.size().
AcceptancePtr conditional_acceptance(std::vector<double> a);
// Per-depth, per-rank conditional acceptance p[d][r] (tree verification); chains use rank 0.
// Ranks beyond a row are never accepted.
AcceptancePtr tree_acceptance(std::vector<std::vector<double>> p);
// Measured AL by K (e.g. from a published table); only the listed K (and 0) are answered.
AcceptancePtr table_acceptance(std::map<int, double> al_by_k);
// Measured acceptance by depth of a chain: reached[d−1] = P(a step accepted at least d drafts), as
// traces and sweep rows report it. AL(K) = 1 + Σ_{d≤K} reached[d−1] for K up to its length (a
// shorter chain of the same greedy drafts accepts the same prefix). Non-increasing in d.
AcceptancePtr acceptance_by_depth(const std::vector<double>& reached);
// An engine's forced mean AL (vLLM's synthetic_acceptance_length; SGLang's SGLANG_SIMULATE_ACC_LEN
// forces the same mean): P(accepted >= d) = clamp(AL − d, 0, 1), the minimum-variance schedule vLLM
// resolves it to. Answers K only when AL <= K + 1, as vLLM requires. (vLLM's other form,
// synthetic_acceptance_rates, is per-position unconditional rates: acceptance_by_depth.)
AcceptancePtr synthetic_acceptance_length(double al);
// Replay of recorded steps: accepted[i] = drafts accepted at step i (0..recorded_k), excluding the
// bonus token. A chain of k ≤ recorded_k drafts (the same greedy drafts, truncated) would have
// accepted min(accepted[i], k), so AL(k) = 1 + mean(min(accepted, k)) exactly.
AcceptancePtr replay_acceptance(std::vector<int> accepted, int recorded_k);

// Draft-free methods draft only on the steps that find a match; the others verify the bonus token
// alone. With a share `match_rate` h of the steps drafting, and `inner` the acceptance among those,
// AL(K) = 1 + h·(AL_inner(K) − 1) and P(accepted ≥ d) = h·P_inner(accepted ≥ d).
AcceptancePtr with_match_rate(AcceptancePtr inner, double match_rate);
// `inner` under a longer description ("category 'blazedit' of ngram (measured ...): <inner's>").
AcceptancePtr described_acceptance(AcceptancePtr inner, std::string description);

// Leviathan et al. closed forms, for reference and tests: expected tokens per step and speedup
// with cost ratio c = T_draft / T_target.
double leviathan_expected_tokens(double alpha, int k);
double leviathan_speedup(double alpha, int k, double c);

}  // namespace specdec::sim
