// llama.cpp's draft-p-min (common/speculative.cpp, common_speculative_gen_draft and its multi-
// sequence successor; server slot handling): draft up to n_max (here the method's --k) while the
// drafter's top-1 probability is at least p_min (0.75, common.h); a draft below it is dropped
// (current upstream checks before adding it; keep_low=1 keeps it, as releases b4200…b6xxx did).
// Drafts shorter than n_min (0) are discarded and the step decodes plainly. llama.cpp's p is
// renormalised over its draft sampler's top-k candidates; specdec's confidence is over the whole
// vocabulary (a little lower), see docs/policies.md.
#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

class PMin final : public SpeculationPolicy {
 public:
  PMin(double p_min, int n_min, bool keep_low) : p_min_(p_min), n_min_(n_min), keep_low_(keep_low) {}
  std::string name() const override { return "p-min"; }
  StepPlan plan(const StepContext& c) override { return {c.max_depth, true, n_min_}; }
  // The top-1 probability is a function of the drafter's distribution, so checking it before the
  // draft is taken (dropping it) keeps sampled decoding exact.
  bool draft_at(int, double top) const override { return keep_low_ || top >= p_min_; }
  bool draft_after(int, double, double top) const override { return !keep_low_ || top >= p_min_; }
  void observe(const StepOutcome&) override {}

 private:
  double p_min_;
  int n_min_;
  bool keep_low_;
};

}  // namespace

PolicyEntry p_min() {
  PolicyEntry e;
  e.name = "p-min";
  e.title = "llama.cpp draft-p-min";
  e.summary = "draft while the drafter's top-1 probability is at least p_min; discard drafts shorter than n_min";
  e.source = "llama.cpp common/speculative.cpp (--draft-p-min, --draft-min), tools/server";
  using K = PolicyParam::Kind;
  e.params = {
      policy_param("p_min", K::number, 0.75, 0, 1, "minimum drafter top-1 probability (--draft-p-min; common.h default 0.75)"),
      policy_param("n_min", K::integer, 0, 0, 4096, "drafts shorter than this are discarded (--draft-min; common.h default 0)"),
      policy_param("keep_low", K::integer, 0, 0, 1,
                   "1: keep the draft that fell below p_min and stop after it (llama.cpp before its multi-sequence drafter)"),
  };
  e.make = [](const nlohmann::json& j) -> std::unique_ptr<SpeculationPolicy> {
    return std::make_unique<PMin>(policy_number(j, "p_min"), static_cast<int>(policy_number(j, "n_min")),
                                  policy_number(j, "keep_low") != 0);
  };
  return e;
}

}  // namespace specdec::policies
