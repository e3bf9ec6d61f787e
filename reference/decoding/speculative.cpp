#include "reference/decoding/speculative.hpp"

#include "reference/decoding/sequence_decoder.hpp"

namespace specdec {

GenerationResult decode_speculative(const LanguageModel& target, Proposer& proposer, const TokenAcceptor& acceptor,
                                    const std::vector<int32_t>& prompt, const SamplingParams& sampling,
                                    const GenerationOptions& options, DecodeObserver* observer) {
  auto cache = target.new_cache(decoder_cache_capacity(target, &proposer, prompt.size(), options));
  return decode_speculative(target, *cache, proposer, acceptor, prompt, sampling, options, observer);
}

GenerationResult decode_speculative(const LanguageModel& target, KVCache& target_cache, Proposer& proposer,
                                    const TokenAcceptor& acceptor, const std::vector<int32_t>& prompt,
                                    const SamplingParams& sampling, const GenerationOptions& options,
                                    DecodeObserver* observer) {
  SequenceDecoder decoder(target, target_cache, &proposer, acceptor, prompt, sampling, options, observer);
  return decode_alone(target, decoder);
}

GenerationResult decode_speculative(const LanguageModel& target, Proposer& proposer, const TokenAcceptor& acceptor,
                                    const std::vector<int32_t>& prompt, const SamplingParams& sampling,
                                    const GenerationOptions& options, const SpeculationControl& control,
                                    DecodeObserver* observer) {
  auto cache = target.new_cache(decoder_cache_capacity(target, &proposer, prompt.size(), options, control.fallbacks));
  SequenceDecoder decoder(target, *cache, &proposer, acceptor, prompt, sampling, options, observer, control);
  return decode_alone(target, decoder);
}

}  // namespace specdec
