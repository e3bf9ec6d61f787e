#pragma once
// Speculative decoding, written once for every drafter: each step the Proposer drafts a chain or a
// tree after the pending token, the target verifies [pending, drafts...] in one forward under a
// tree mask, the acceptor decides, and the target's KV cache is compacted to the accepted path.
//
// Greedy and coupled sampling reproduce sequential decoding token for token; sample mode with
// the rejection acceptor is lossless (the output has the target's distribution).
#include <vector>

#include "reference/acceptance/acceptor.hpp"
#include "reference/decoding/decode_observer.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/decoding/speculation_control.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/model/language_model.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {

GenerationResult decode_speculative(const LanguageModel& target, Proposer& proposer, const TokenAcceptor& acceptor,
                                    const std::vector<int32_t>& prompt, const SamplingParams& sampling,
                                    const GenerationOptions& options, DecodeObserver* observer = nullptr);

// The same on a target cache the caller owns (empty, from target.new_cache), so that it can be
// inspected afterwards: it then holds every token except the last emitted one.
GenerationResult decode_speculative(const LanguageModel& target, KVCache& target_cache, Proposer& proposer,
                                    const TokenAcceptor& acceptor, const std::vector<int32_t>& prompt,
                                    const SamplingParams& sampling, const GenerationOptions& options,
                                    DecodeObserver* observer = nullptr);

// Under a speculation policy, with fallback drafters and a draft time budget (speculation_control.hpp):
// the same tokens, at another cost.
GenerationResult decode_speculative(const LanguageModel& target, Proposer& proposer, const TokenAcceptor& acceptor,
                                    const std::vector<int32_t>& prompt, const SamplingParams& sampling,
                                    const GenerationOptions& options, const SpeculationControl& control,
                                    DecodeObserver* observer = nullptr);

}  // namespace specdec
