// A scripted depth per step, cycling through a list: for teaching (watch AL and cost follow K) and
// for the tests that switch speculation off and on again between steps.
#include <algorithm>

#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

class Schedule final : public SpeculationPolicy {
 public:
  explicit Schedule(std::vector<int> depths) : depths_(std::move(depths)) {}
  std::string name() const override { return "schedule"; }
  StepPlan plan(const StepContext& c) override {
    const int d = depths_[static_cast<std::size_t>(c.step) % depths_.size()];
    last_ = std::min(d, c.max_depth);
    return {last_, false};
  }
  void observe(const StepOutcome&) override {}
  std::string state() const override { return "K " + std::to_string(last_); }

 private:
  std::vector<int> depths_;
  int last_ = 0;
};

}  // namespace

PolicyEntry schedule() {
  PolicyEntry e;
  e.name = "schedule";
  e.title = "Scripted schedule";
  e.summary = "step s drafts depths[s mod n] (0 = a plain decoding step)";
  e.source = "specdec (teaching and tests)";
  PolicyParam depths = policy_param("depths", PolicyParam::Kind::list, {4, 0, 2}, 0, 4096, "the depths to cycle through, in order");
  depths.increasing = false;
  e.params = {depths};
  e.make = [](const nlohmann::json& p) -> std::unique_ptr<SpeculationPolicy> {
    return std::make_unique<Schedule>(policy_list(p, "depths"));
  };
  return e;
}

}  // namespace specdec::policies
