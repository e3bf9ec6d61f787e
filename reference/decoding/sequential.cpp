#include "reference/decoding/sequential.hpp"

#include "reference/decoding/sequence_decoder.hpp"

namespace specdec {

GenerationResult decode_sequential(const LanguageModel& model, const std::vector<int32_t>& prompt,
                                   const SamplingParams& sampling, const GenerationOptions& options,
                                   DecodeObserver* observer) {
  auto cache = model.new_cache(decoder_cache_capacity(model, nullptr, prompt.size(), options));
  const MatchAcceptor unused;  // sequential decoding verifies no drafts
  SequenceDecoder decoder(model, *cache, nullptr, unused, prompt, sampling, options, observer);
  return decode_alone(model, decoder);
}

}  // namespace specdec
