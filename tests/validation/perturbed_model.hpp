#pragma once
// A backend with a deliberate error, for testing the validator: it wraps a LanguageModel and, at
// one chosen forward (forward i = decoding step i for a target), changes one logits row or the
// hidden states. Everything else passes through unchanged.
#include <cmath>
#include <optional>

#include "reference/model/language_model.hpp"
#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/sampling_params.hpp"

namespace specdec::testing {

class PerturbedModel final : public LanguageModel {
 public:
  enum class Kind {
    flip,       // the row's runner-up gets the top score + amount: the decision flips
    tie_below,  // the runner-up gets the top score − amount: a near-tie the top still wins
    tie_above,  // the runner-up gets the top score + amount: the same near-tie, flipped
    hidden,     // every returned hidden-state value + amount
  };

  // Scores are logits (greedy) or logit + T·Gumbel at the row's next position (coupled), so that
  // "runner-up" and "top" are those of the decision the sampling mode makes.
  PerturbedModel(const LanguageModel& inner, int forward, Kind kind, double amount, SamplingParams sampling = {}, int row = 0)
      : inner_(inner), forward_(forward), kind_(kind), amount_(amount), sampling_(sampling), row_(row) {}

  const ModelConfig& config() const override { return inner_.config(); }
  // A decoding run creates one cache: forwards are counted from there, so that every run of
  // this backend is perturbed the same way (the validator reruns the candidate after near-ties).
  std::unique_ptr<KVCache> new_cache(int capacity) const override {
    count_ = 0;
    return inner_.new_cache(capacity);
  }

  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override {
    const int length = cache.length();
    ForwardResult out = inner_.forward(cache, request);
    if (count_++ != forward_) return out;
    if (kind_ == Kind::hidden) {
      out.final_hidden.array() += static_cast<float>(amount_);
      out.aux_hidden.array() += static_cast<float>(amount_);
      return out;
    }
    // The position of the token the row predicts: the row's token position + 1.
    const int t = request.logit_rows.empty() ? row_ : request.logit_rows[static_cast<size_t>(row_)];
    const int32_t position = (request.positions.empty() ? length + t : request.positions[static_cast<size_t>(t)]) + 1;
    float* row = out.logits.row(row_).data();
    const int V = static_cast<int>(out.logits.cols());
    auto noise = [&](int i) {
      return sampling_.mode == SamplingParams::Mode::coupled
                 ? sampling_.temperature * gumbel(sampling_.seed, 0, static_cast<uint32_t>(position), static_cast<uint32_t>(i))
                 : 0.0;
    };
    int top = 0, second = -1;
    for (int i = 1; i < V; ++i)
      if (row[i] + noise(i) > row[top] + noise(top)) top = i;
    for (int i = 0; i < V; ++i)
      if (i != top && (second < 0 || row[i] + noise(i) > row[second] + noise(second))) second = i;
    const double top_score = row[top] + noise(top);
    const double target = kind_ == Kind::tie_below ? top_score - amount_ : top_score + amount_;
    row[second] = static_cast<float>(target - noise(second));
    top_ = top;
    runner_up_ = second;
    return out;
  }

  // The row's best and second-best tokens before the change (-1 until the chosen forward ran).
  int32_t top() const { return top_; }
  int32_t runner_up() const { return runner_up_; }

 private:
  const LanguageModel& inner_;
  int forward_;
  Kind kind_;
  double amount_;
  SamplingParams sampling_;
  int row_;
  mutable int count_ = 0;
  mutable int32_t top_ = -1, runner_up_ = -1;
};

}  // namespace specdec::testing
