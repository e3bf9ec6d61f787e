// Hugging Face assisted generation, num_assistant_tokens_schedule="heuristic"
// (transformers generation/candidate_generator.py, AssistedCandidateGenerator.
// update_candidate_strategy): after each step, K += 2 when every draft produced was accepted,
// else K = max(1, K − 1). The default K of 5 is transformers' num_assistant_tokens while
// "heuristic" was the default schedule (to v4.44). Here K never exceeds the method's --k (the
// verify budget the caches are sized for); transformers leaves it unbounded.
#include <algorithm>

#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

class HfHeuristic final : public SpeculationPolicy {
 public:
  explicit HfHeuristic(int start) : k_(start) {}
  std::string name() const override { return "hf-heuristic"; }
  StepPlan plan(const StepContext& c) override {
    max_ = c.max_depth;
    k_ = std::min(k_, max_);
    return {k_, false};
  }
  void observe(const StepOutcome& o) override {
    if (o.planned_depth == 0) return;
    k_ = o.accepted == o.drafted_depth ? std::min(k_ + 2, max_) : std::max(1, k_ - 1);
  }
  std::string state() const override { return "K " + std::to_string(k_); }

 private:
  int k_;
  int max_ = 1;
};

}  // namespace

PolicyEntry hf_heuristic() {
  PolicyEntry e;
  e.name = "hf-heuristic";
  e.title = "Hugging Face heuristic";
  e.summary = "K += 2 when every draft was accepted, else K = max(1, K - 1)";
  e.source = "transformers AssistedCandidateGenerator.update_candidate_strategy, schedule \"heuristic\"";
  e.params = {policy_param("start", PolicyParam::Kind::integer, 5, 1, 4096,
                           "K of the first step (transformers' num_assistant_tokens; 5 while \"heuristic\" was the default)")};
  e.make = [](const nlohmann::json& p) -> std::unique_ptr<SpeculationPolicy> {
    return std::make_unique<HfHeuristic>(static_cast<int>(policy_number(p, "start")));
  };
  return e;
}

}  // namespace specdec::policies
