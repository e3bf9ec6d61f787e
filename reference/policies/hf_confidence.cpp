// Hugging Face assisted generation since v4.45: a constant K (num_assistant_tokens, 20; here the
// method's --k) and a stop on the drafter's confidence (stopping_criteria.py, ConfidenceCriteria):
// after each draft, stop when the drafter's probability of the token it just drew is below the
// threshold (0.4), keeping that token. The threshold is refit online
// (AssistedCandidateGenerator.update_candidate_strategy): every drafted token's probability is
// labelled 1 if accepted, 0 for the first rejected one (later ones were never judged); once more
// than 5 labels of both kinds exist, the ROC curve of (labels, probabilities) is computed as
// sklearn.metrics.roc_curve does (drop_intermediate) and the threshold minimising fpr + 3·fnr is
// taken (the first minimum). transformers writes the refit value to the assistant's config; here
// it applies from the next step.
#include <algorithm>
#include <limits>
#include <numeric>

#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

// sklearn.metrics.roc_curve(labels, scores) with drop_intermediate=True: thresholds (descending,
// the first +inf), false and true positive rates. Both classes must be present.
struct Roc {
  std::vector<double> thresholds, fpr, tpr;
};
Roc roc_curve(const std::vector<int>& labels, const std::vector<double>& scores) {
  std::vector<std::size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return scores[a] > scores[b]; });
  std::vector<double> thr, tps, fps;
  double tp = 0, fp = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    (labels[order[i]] ? tp : fp) += 1;
    if (i + 1 == order.size() || scores[order[i + 1]] != scores[order[i]]) {  // the last of a distinct score
      thr.push_back(scores[order[i]]);
      tps.push_back(tp);
      fps.push_back(fp);
    }
  }
  // drop_intermediate: keep the ends and every point where either curve bends.
  std::vector<std::size_t> keep;
  for (std::size_t i = 0; i < thr.size(); ++i) {
    const bool end = i == 0 || i + 1 == thr.size();
    if (end || fps[i + 1] - 2 * fps[i] + fps[i - 1] != 0 || tps[i + 1] - 2 * tps[i] + tps[i - 1] != 0) keep.push_back(i);
  }
  Roc r;
  r.thresholds.push_back(std::numeric_limits<double>::infinity());
  r.fpr.push_back(0);
  r.tpr.push_back(0);
  for (std::size_t i : keep) {
    r.thresholds.push_back(thr[i]);
    r.fpr.push_back(fps[i] / fp);
    r.tpr.push_back(tps[i] / tp);
  }
  return r;
}

class HfConfidence final : public SpeculationPolicy {
 public:
  HfConfidence(double threshold, bool refit) : threshold_(threshold), refit_(refit) {}
  std::string name() const override { return "hf-confidence"; }
  StepPlan plan(const StepContext& c) override { return {c.max_depth, true}; }
  bool draft_after(int, double confidence, double) const override { return confidence >= threshold_; }
  void observe(const StepOutcome& o) override {
    if (!refit_ || o.planned_depth == 0 || !o.confidences) return;
    probs_.insert(probs_.end(), o.confidences->begin(), o.confidences->end());
    matches_.insert(matches_.end(), static_cast<std::size_t>(o.accepted), 1);
    if (probs_.size() > matches_.size()) matches_.push_back(0);
    probs_.resize(matches_.size());  // drafts after the first rejection were never judged
    const bool both = std::count(matches_.begin(), matches_.end(), 0) > 0 && std::count(matches_.begin(), matches_.end(), 1) > 0;
    if (probs_.size() <= 5 || !both) return;
    const Roc r = roc_curve(matches_, probs_);
    std::size_t best = 0;
    double best_cost = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < r.thresholds.size(); ++i) {
      const double cost = r.fpr[i] + 3 * (1 - r.tpr[i]);  // transformers: 25% cost to false positives, 75% to misses
      if (cost < best_cost) {
        best_cost = cost;
        best = i;
      }
    }
    threshold_ = r.thresholds[best];
  }
  std::string state() const override { return "threshold " + std::to_string(threshold_).substr(0, 5); }

 private:
  double threshold_;
  bool refit_;
  std::vector<double> probs_;
  std::vector<int> matches_;
};

}  // namespace

PolicyEntry hf_confidence() {
  PolicyEntry e;
  e.name = "hf-confidence";
  e.title = "Hugging Face confidence stop";
  e.summary = "stop drafting after a draft whose drafter probability is below a threshold, refit online by ROC";
  e.source = "transformers ConfidenceCriteria and AssistedCandidateGenerator (v4.45+, assistant_confidence_threshold)";
  e.params = {
      policy_param("threshold", PolicyParam::Kind::number, 0.4, 0, 1, "the starting threshold (assistant_confidence_threshold)"),
      policy_param("refit", PolicyParam::Kind::integer, 1, 0, 1,
                   "1: refit the threshold online by the ROC rule (transformers does when scikit-learn is installed)"),
  };
  e.make = [](const nlohmann::json& p) -> std::unique_ptr<SpeculationPolicy> {
    return std::make_unique<HfConfidence>(policy_number(p, "threshold"), policy_number(p, "refit") != 0);
  };
  return e;
}

}  // namespace specdec::policies
