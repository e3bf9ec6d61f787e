#include "reference/decoding/sequential.hpp"

#include <chrono>

#include "reference/core/error.hpp"

namespace specdec {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

GenerationResult decode_sequential(const LanguageModel& model, const std::vector<int32_t>& prompt,
                                   const SamplingParams& sampling, const GenerationOptions& options,
                                   DecodeObserver* observer) {
  const ModelConfig& c = model.config();
  const int needed = checked_capacity(prompt.size(), options.max_new_tokens, 0, c.max_position_embeddings);
  sampling.validate();
  const int capacity = options.cache_capacity > 0 ? options.cache_capacity : needed;
  auto cache = model.new_cache(capacity);

  GenerationResult result;
  result.stop_reason = "max_tokens";
  int64_t t0 = now_ns();
  // Greedy decoding with no observer needs only each step's argmax: the backend picks it where
  // the logits are (a GPU sends one id back instead of a row of V floats).
  const bool argmax_only = !observer && sampling.mode == SamplingParams::Mode::greedy;
  ForwardRequest prefill;
  prefill.tokens = prompt;
  prefill.logit_rows = {static_cast<int>(prompt.size()) - 1};
  prefill.argmax_only = argmax_only;
  ForwardResult out = model.forward(*cache, prefill);  // logits (1, V), or argmax (1)
  int64_t step_ns = now_ns() - t0;
  result.stats.prefill_ns = step_ns;
  result.stats.target_forwards = 1;
  if (observer) observer->on_prefill(prompt, step_ns);
  const int64_t decode_start = now_ns();

  for (int i = 0; i < options.max_new_tokens; ++i) {
    const int32_t position = static_cast<int32_t>(prompt.size()) + i;
    const int32_t token =
        argmax_only ? out.argmax[0] : sample_token(out.logits.data(), c.vocab_size, sampling, options.sequence, position);
    result.tokens.push_back(token);
    if (observer) {
      observer->on_sequential_step({i, position, out.logits.data(), c.vocab_size, token, step_ns});
    }
    if (options.stop_at_eos && c.is_eos(token)) {
      result.stop_reason = "eos";
      break;
    }
    if (i + 1 == options.max_new_tokens) break;  // the last token needs no forward
    t0 = now_ns();
    ForwardRequest step = ForwardRequest::chain({token});
    step.argmax_only = argmax_only;
    out = model.forward(*cache, step);
    step_ns = now_ns() - t0;
    ++result.stats.target_forwards;
  }
  result.stats.decode_ns = now_ns() - decode_start;
  // Each decode forward is a step that emits one token (AL 1.00); the prefill gives the first.
  result.stats.steps = result.stats.target_forwards - 1;
  result.stats.emitted_in_steps = result.stats.steps;
  if (observer) observer->on_finish(result.tokens, result.stop_reason);
  return result;
}

}  // namespace specdec
