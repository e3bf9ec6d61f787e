// vLLM's dynamic speculation (V1 "Dynamic SD", config num_speculative_tokens_per_batch_size,
// vllm/v1/spec_decode/dynamic/utils.py): K by the number of sequences scheduled in the step, from
// ranges starting at batch size 1; a batch size between or after the ranges carries the previous
// range's K forward (so each BATCH:K here is a range start). K 0 switches speculation off for that
// step (v0's speculative_disable_by_batch_size is the schedule 1:K/N:0). Optionally the acceptance
// length controller (vllm/v1/spec_decode/dynamic/acceptance_length.py, observation window W
// steps): over a tumbling window, target = max(1, floor(mean accepted drafts + 1.5)); K drops to
// a lower target at once and rises by at most one per window, never above the schedule's K.
#include <algorithm>
#include <cmath>

#include "reference/core/error.hpp"
#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

class VllmBatch final : public SpeculationPolicy {
 public:
  VllmBatch(nlohmann::json schedule, int window) : schedule_(std::move(schedule)), window_(window) {}
  std::string name() const override { return "vllm-batch"; }
  StepPlan plan(const StepContext& c) override {
    const int cap = std::min(scheduled_depth(schedule_, c.batch_size), c.max_depth);
    if (window_ == 0) return {cap, false};
    if (k_ < 0) k_ = cap;  // the controller starts at the maximum
    return {std::min(k_, cap), false};
  }
  void observe(const StepOutcome& o) override {
    if (window_ == 0 || o.planned_depth == 0) return;
    ++steps_;
    accepted_ += o.accepted;
    if (steps_ < window_) return;
    const int target = std::max(1, static_cast<int>(std::floor(static_cast<double>(accepted_) / steps_ + 1.5)));
    if (target < k_) k_ = target;
    else if (target > k_) k_ += 1;
    steps_ = 0;
    accepted_ = 0;
  }
  std::string state() const override { return window_ == 0 ? "" : "K " + std::to_string(k_); }

 private:
  nlohmann::json schedule_;
  int window_;
  int k_ = -1;
  int steps_ = 0, accepted_ = 0;
};

}  // namespace

PolicyEntry vllm_batch() {
  using K = PolicyParam::Kind;
  PolicyEntry e;
  e.name = "vllm-batch";
  e.title = "vLLM dynamic speculation";
  e.summary = "K by batch-size range; optionally an acceptance-length controller over a tumbling window";
  e.source = "vLLM num_speculative_tokens_per_batch_size (v1/spec_decode/dynamic), speculative_disable_by_batch_size (v0)";
  e.params = {
      policy_param("schedule", K::schedule, nlohmann::json::array({nlohmann::json::array({1, 4096})}), 0, 4096,
                   "BATCH:K range starts, the first at 1 (default: --k at every batch size)"),
      policy_param("window", K::integer, 0, 0, 1 << 20, "acceptance-length controller window in steps (0: off)"),
  };
  e.check = [](const nlohmann::json& p) {
    if (p.at("schedule").at(0).at(0).get<int>() != 1) {
      throw Error("the schedule's first range must start at batch size 1 (vLLM requires it)");
    }
  };
  e.make = [](const nlohmann::json& p) -> std::unique_ptr<SpeculationPolicy> {
    return std::make_unique<VllmBatch>(p.at("schedule"), static_cast<int>(policy_number(p, "window")));
  };
  return e;
}

}  // namespace specdec::policies
