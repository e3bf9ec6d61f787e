// The method's whole shape every step: what specdec does without a policy, and what every engine
// does with a fixed num_speculative_tokens.
#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

class Fixed final : public SpeculationPolicy {
 public:
  std::string name() const override { return "fixed"; }
  StepPlan plan(const StepContext& c) override { return {c.max_depth, false}; }
  void observe(const StepOutcome&) override {}
};

}  // namespace

PolicyEntry fixed() {
  PolicyEntry e;
  e.name = "fixed";
  e.title = "Fixed";
  e.summary = "the method's K (or tree) every step";
  e.source = "every engine's fixed num_speculative_tokens";
  e.make = [](const nlohmann::json&) -> std::unique_ptr<SpeculationPolicy> { return std::make_unique<Fixed>(); };
  return e;
}

}  // namespace specdec::policies
