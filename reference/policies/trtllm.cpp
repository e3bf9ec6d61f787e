// TensorRT-LLM's speculation controls (PyTorch backend; tensorrt_llm/_torch/speculative/utils.py
// get_draft_len_for_batch_size, speculation_gate.py SpeculationGate):
//  - draft_len_schedule: transition points {batch size: depth}; a batch of b sequences drafts the
//    depth of the first point ≥ b, and 0 (no speculation) beyond the last point. The default
//    schedule gives the method's --k at every batch size.
//  - the acceptance gate: a simple moving average of the acceptance rate (accepted / drafted) of
//    the last `window` speculative steps; once `window` steps were seen and it is below
//    `threshold`, speculation is switched off. TensorRT-LLM switches it off for good (probe 0);
//    probe = N turns it back on after N plain steps with a fresh window (specdec's extension).
//    TensorRT-LLM's gate watches the whole engine; specdec's watches each sequence.
#include <deque>

#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

class Trtllm final : public SpeculationPolicy {
 public:
  Trtllm(nlohmann::json schedule, int window, double threshold, int probe)
      : schedule_(std::move(schedule)), window_(window), threshold_(threshold), probe_(probe) {}
  std::string name() const override { return "trtllm"; }
  StepPlan plan(const StepContext& c) override {
    if (off_ && probe_ > 0 && plain_ >= probe_) {
      off_ = false;
      rates_.clear();
      sum_ = 0;
    }
    if (off_) {
      ++plain_;
      return {0, false};
    }
    int depth = 0;
    for (const auto& point : schedule_) {
      if (point.at(0).get<int>() >= c.batch_size) {
        depth = point.at(1).get<int>();
        break;
      }
    }
    return {std::min(depth, c.max_depth), false};
  }
  void observe(const StepOutcome& o) override {
    if (o.planned_depth == 0 || o.drafted_nodes == 0 || window_ == 0) return;
    rates_.push_back(static_cast<double>(o.accepted) / o.drafted_depth);
    sum_ += rates_.back();
    if (static_cast<int>(rates_.size()) > window_) {
      sum_ -= rates_.front();
      rates_.pop_front();
    }
    if (static_cast<int>(rates_.size()) == window_ && sum_ / window_ < threshold_) {
      off_ = true;
      plain_ = 0;
    }
  }
  std::string state() const override {
    if (off_) return "off";
    return rates_.empty() ? "on" : "rate " + std::to_string(sum_ / static_cast<double>(rates_.size())).substr(0, 4);
  }

 private:
  nlohmann::json schedule_;
  int window_;
  double threshold_;
  int probe_;
  std::deque<double> rates_;
  double sum_ = 0;
  bool off_ = false;
  int plain_ = 0;
};

}  // namespace

PolicyEntry trtllm() {
  using K = PolicyParam::Kind;
  PolicyEntry e;
  e.name = "trtllm";
  e.title = "TensorRT-LLM schedule and acceptance gate";
  e.summary = "depth by batch size (transition points); off once the rolling acceptance rate drops below a threshold";
  e.source = "TensorRT-LLM draft_len_schedule (speculative/utils.py), SpeculationGate (acceptance_rate_window_size, acceptance_rate_threshold)";
  e.params = {
      policy_param("schedule", K::schedule, nlohmann::json::array({nlohmann::json::array({1 << 20, 4096})}), 0, 4096,
                   "draft_len_schedule: BATCH:DEPTH transition points (default: --k at every batch size)"),
      policy_param("window", K::integer, 0, 0, 1 << 20, "acceptance_rate_window_size (0: no gate, TensorRT-LLM's default)"),
      policy_param("threshold", K::number, 0.0, 0, 1, "acceptance_rate_threshold: switch off below this mean rate"),
      policy_param("probe", K::integer, 0, 0, 1 << 20, "plain steps before speculating again (0: off for good)"),
  };
  e.make = [](const nlohmann::json& p) -> std::unique_ptr<SpeculationPolicy> {
    return std::make_unique<Trtllm>(p.at("schedule"), static_cast<int>(policy_number(p, "window")),
                                    policy_number(p, "threshold"), static_cast<int>(policy_number(p, "probe")));
  };
  return e;
}

}  // namespace specdec::policies
