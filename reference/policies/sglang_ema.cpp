// SGLang's adaptive speculation (python/sglang/srt/speculative/adaptive_spec_params.py,
// --speculative-adaptive): an EMA (alpha 0.2) of the accepted draft count chooses the draft depth
// among candidate tiers (1, 3, 7 in the first release) with hysteresis. After `warmup` steps, every
// `interval`-th step: move down a tier while EMA ≤ lower tier − 0.5 + down (−0.25; a 0 tier's
// threshold is 0.5 + down), and only when it did not move down, up while EMA > tier − 0.5 + up
// (0). A 0 tier turns speculation off; the EMA is not updated while off, and the next recompute
// probes the next tier up (so speculation comes back on). SGLang keeps one controller per batch
// and averages the batch's accepted counts; specdec keeps one per sequence, fed its own steps.
#include <algorithm>

#include "reference/policies/entries.hpp"

namespace specdec::policies {

namespace {

class SglangEma final : public SpeculationPolicy {
 public:
  SglangEma(std::vector<int> tiers, double alpha, int interval, int warmup, double down, double up, int initial)
      : tiers_(std::move(tiers)), alpha_(alpha), interval_(interval), warmup_(warmup), down_(down), up_(up) {
    // The tier nearest the initial depth (ties to the larger), the EMA at its "neutral" value.
    idx_ = 0;
    for (std::size_t i = 1; i < tiers_.size(); ++i) {
      if (std::abs(tiers_[i] - initial) <= std::abs(tiers_[idx_] - initial)) idx_ = i;
    }
    ema_ = tiers_[idx_] - 1.0;
  }
  std::string name() const override { return "sglang-ema"; }
  StepPlan plan(const StepContext& c) override { return {std::min(tiers_[idx_], c.max_depth), false}; }
  void observe(const StepOutcome& o) override {
    if (tiers_[idx_] > 0 && o.planned_depth > 0) ema_ = (1 - alpha_) * ema_ + alpha_ * o.accepted;
    ++count_;
    if (count_ <= warmup_ || (count_ - warmup_) % interval_ != 0) return;
    recompute();
  }
  std::string state() const override { return "ema " + std::to_string(ema_).substr(0, 4) + " tier " + std::to_string(tiers_[idx_]); }

 private:
  void recompute() {
    const std::size_t old = idx_;
    if (tiers_[idx_] == 0) {  // probe after an interval without speculation
      idx_ = std::min(idx_ + 1, tiers_.size() - 1);
      if (tiers_[idx_] > 0 && ema_ < 0) ema_ = tiers_[idx_] - 1.0;
      return;
    }
    while (idx_ > 0) {
      const int prev = tiers_[idx_ - 1];
      const double drop = (prev == 0 ? 0.5 : prev - 0.5) + down_;
      if (ema_ <= drop) --idx_;
      else break;
    }
    if (idx_ < old) return;
    while (idx_ + 1 < tiers_.size() && ema_ > tiers_[idx_] - 0.5 + up_) ++idx_;
  }

  std::vector<int> tiers_;
  double alpha_;
  int interval_, warmup_;
  double down_, up_;
  std::size_t idx_ = 0;
  double ema_ = 0;
  int count_ = 0;
};

}  // namespace

PolicyEntry sglang_ema() {
  using K = PolicyParam::Kind;
  PolicyEntry e;
  e.name = "sglang-ema";
  e.title = "SGLang adaptive (EMA tiers)";
  e.summary = "an EMA of accepted drafts picks the depth among tiers, with hysteresis; a 0 tier is probed back up";
  e.source = "SGLang python/sglang/srt/speculative/adaptive_spec_params.py (--speculative-adaptive)";
  e.params = {
      policy_param("tiers", K::list, {1, 3, 7}, 0, 4096, "candidate depths (candidate_steps); 0 = speculation off"),
      policy_param("alpha", K::number, 0.2, 0, 1, "EMA weight of the newest step (ema_alpha)"),
      policy_param("interval", K::integer, 5, 1, 1 << 20, "steps between recomputes (update_interval)"),
      policy_param("warmup", K::integer, 10, 0, 1 << 20, "steps before the first recompute (warmup_batches)"),
      policy_param("down", K::number, -0.25, -1e6, 1e6, "hysteresis of a move down (down_hysteresis)"),
      policy_param("up", K::number, 0.0, -1e6, 1e6, "hysteresis of a move up (up_hysteresis)"),
      policy_param("initial", K::integer, 3, 0, 4096, "the starting depth: the nearest tier (speculative_num_steps)"),
  };
  e.make = [](const nlohmann::json& p) -> std::unique_ptr<SpeculationPolicy> {
    return std::make_unique<SglangEma>(policy_list(p, "tiers"), policy_number(p, "alpha"),
                                       static_cast<int>(policy_number(p, "interval")), static_cast<int>(policy_number(p, "warmup")),
                                       policy_number(p, "down"), policy_number(p, "up"), static_cast<int>(policy_number(p, "initial")));
  };
  return e;
}

}  // namespace specdec::policies
