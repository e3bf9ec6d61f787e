// Goodput-optimal K (SmartSpec, Liu et al. arXiv 2406.14066; the per-position form proposed for
// vLLM): each step picks the K in [0, --k] maximising
//     goodput(K) = E[emitted | K] / cost(K),   E[emitted | K] = 1 + Σ_{i≤K} Π_{j≤i} α_j,
//     cost(K) = 1 + K·c_draft + [K > 0]·c_verify        (in target-forward units),
// where α_j is this sequence's conditional acceptance rate at draft depth j, an EMA (weight
// `alpha`) over the steps that reached depth j, starting from `prior`. The costs are parameters:
// `specdec simulate` gives them for a model pair on a GPU (drafter forward / target forward, and
// the verify's extra cost over a one-token forward).
#include <algorithm>

#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

class Goodput final : public SpeculationPolicy {
 public:
  Goodput(double c_draft, double c_verify, double alpha, double prior)
      : c_draft_(c_draft), c_verify_(c_verify), alpha_(alpha), prior_(prior) {}
  std::string name() const override { return "goodput"; }
  StepPlan plan(const StepContext& c) override {
    if (static_cast<int>(rate_.size()) < c.max_depth) rate_.resize(static_cast<std::size_t>(c.max_depth), prior_);
    int best = 0;
    double best_goodput = 1.0;  // K = 0: one token per target forward
    double emitted = 1, reach = 1;
    for (int k = 1; k <= c.max_depth; ++k) {
      reach *= rate_[static_cast<std::size_t>(k - 1)];
      emitted += reach;
      const double g = emitted / (1 + k * c_draft_ + c_verify_);
      if (g > best_goodput) {
        best_goodput = g;
        best = k;
      }
    }
    k_ = best;
    return {best, false};
  }
  void observe(const StepOutcome& o) override {
    if (o.planned_depth == 0) return;
    // Depth j was attempted when every shallower draft was accepted and a draft reached it.
    for (int j = 1; j <= o.drafted_depth && j <= o.accepted + 1; ++j) {
      double& a = rate_[static_cast<std::size_t>(j - 1)];
      a = (1 - alpha_) * a + alpha_ * (j <= o.accepted ? 1.0 : 0.0);
    }
  }
  std::string state() const override { return "K " + std::to_string(k_); }

 private:
  double c_draft_, c_verify_, alpha_, prior_;
  std::vector<double> rate_;  // (max depth) conditional acceptance per depth
  int k_ = 0;
};

}  // namespace

PolicyEntry goodput() {
  using K = PolicyParam::Kind;
  PolicyEntry e;
  e.name = "goodput";
  e.title = "Goodput-optimal K";
  e.summary = "K maximising expected tokens per unit cost from per-position acceptance (EMA) and step costs";
  e.source = "SmartSpec (arXiv 2406.14066); vLLM's per-position adaptive-K proposal";
  e.params = {
      policy_param("c_draft", K::number, 0.05, 0, 1e3, "a drafter forward's cost in target forwards"),
      policy_param("c_verify", K::number, 0.1, 0, 1e3, "a verify's extra cost over a one-token target forward"),
      policy_param("alpha", K::number, 0.1, 0, 1, "EMA weight of the newest observation of a depth's acceptance"),
      policy_param("prior", K::number, 0.8, 0, 1, "each depth's acceptance rate before it is observed"),
  };
  e.make = [](const nlohmann::json& p) -> std::unique_ptr<SpeculationPolicy> {
    return std::make_unique<Goodput>(policy_number(p, "c_draft"), policy_number(p, "c_verify"), policy_number(p, "alpha"),
                                     policy_number(p, "prior"));
  };
  return e;
}

}  // namespace specdec::policies
