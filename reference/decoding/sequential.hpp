#pragma once
// Sequential decoding: one target forward per token. The baseline every speculative method must
// reproduce (token for token under greedy and coupled sampling).
#include <vector>

#include "reference/decoding/decode_observer.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/model/language_model.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {

GenerationResult decode_sequential(const LanguageModel& model, const std::vector<int32_t>& prompt,
                                   const SamplingParams& sampling, const GenerationOptions& options,
                                   DecodeObserver* observer = nullptr);

}  // namespace specdec
