// SpecDec++ (Huang, Guo, Wang, arXiv 2405.19715; Kaffaljidhmah2/SpecDec_pp hf_generation.py,
// schedule "ada"): after drafting token k, stop when the predicted probability that at least one
// proposed token is rejected, 1 − ∏ β_i over the tokens before it (β_1 = 1: the first input is
// verified), exceeds h; always at least `min` and at most `max` drafts (the bound, inclusive).
// SpecDec++ predicts β_i with a trained acceptance head on the drafter's hidden state; specdec has
// no such head for its drafters, so β_i is the drafter's confidence calibrated online: the
// acceptance frequency of this sequence's earlier drafts in the same confidence decile, with the
// confidence itself as a prior worth `prior` observations. Defaults: the README's benchmark
// recipe (h 0.3, bound 2…20; 20 is capped at the method's --k).
#include <algorithm>
#include <array>

#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

class SpecDecPP final : public SpeculationPolicy {
 public:
  SpecDecPP(double h, int min, int max, double prior) : h_(h), min_(min), max_(max), prior_(prior) {}
  std::string name() const override { return "specdec++"; }
  StepPlan plan(const StepContext& c) override {
    product_ = 1;
    previous_ = -1;
    return {std::min(max_, c.max_depth), true};
  }
  bool draft_after(int depth, double confidence, double) const override {
    // The product covers the drafts before this one, as SpecDec++'s head scores a token from the
    // next position's hidden state.
    if (previous_ >= 0) product_ *= beta(previous_);
    previous_ = confidence;
    if (depth >= max_) return false;
    if (depth < min_) return true;
    return 1 - product_ <= h_;
  }
  void observe(const StepOutcome& o) override {
    if (o.planned_depth == 0 || !o.confidences) return;
    const auto& c = *o.confidences;
    for (std::size_t i = 0; i < c.size() && static_cast<int>(i) <= o.accepted; ++i) {  // judged drafts only
      Bin& b = bins_[bin(c[i])];
      b.trials += 1;
      b.accepts += static_cast<int>(i) < o.accepted ? 1 : 0;
    }
  }

 private:
  struct Bin {
    double trials = 0, accepts = 0;
  };
  static std::size_t bin(double c) { return std::min<std::size_t>(9, static_cast<std::size_t>(std::max(0.0, c) * 10)); }
  double beta(double c) const {
    const Bin& b = bins_[bin(c)];
    return (b.accepts + prior_ * c) / (b.trials + prior_);
  }

  double h_;
  int min_, max_;
  double prior_;
  std::array<Bin, 10> bins_{};
  // This step's running product and the newest draft's confidence (set while drafting).
  mutable double product_ = 1;
  mutable double previous_ = -1;
};

}  // namespace

PolicyEntry specdec_pp() {
  PolicyEntry e;
  e.name = "specdec++";
  e.title = "SpecDec++";
  e.summary = "stop when the predicted chance of a rejection, 1 - prod(beta_i), exceeds h";
  e.source = "Huang et al. arXiv 2405.19715; SpecDec_pp hf_generation.py (beta from calibrated drafter confidence)";
  using K = PolicyParam::Kind;
  e.params = {
      policy_param("h", K::number, 0.3, 0, 1, "stop threshold on 1 - prod(beta) (the README recipe's thres 0.3; sample.py uses 0.7)"),
      policy_param("min", K::integer, 2, 1, 4096, "drafts always made (--bound's first value)"),
      policy_param("max", K::integer, 20, 1, 4096, "drafts at most (--bound's second value; capped at --k)"),
      policy_param("prior", K::number, 4.0, 0, 1e6, "weight, in observations, of the confidence as the prior of beta (specdec's calibration)"),
  };
  e.make = [](const nlohmann::json& p) -> std::unique_ptr<SpeculationPolicy> {
    return std::make_unique<SpecDecPP>(policy_number(p, "h"), static_cast<int>(policy_number(p, "min")),
                                       static_cast<int>(policy_number(p, "max")), policy_number(p, "prior"));
  };
  return e;
}

}  // namespace specdec::policies
