#pragma once
// The readable header of the explain and compare pages: what was run, as labelled facts in words
// ("method", "drafting", "sampling", "prompt", ...) rather than the method's JSON, so a reader
// who did not type the command can tell what the page shows.
#include <string>

#include <nlohmann/json.hpp>

#include "reference/sampling/sampling_params.hpp"
#include "runtime/decode_request.hpp"

namespace specdec::cli {

// The sampling rule in words: "greedy (the target's top choice)", "sampling at temperature 0.8,
// seed 0, top-k 50", "coupled sampling at temperature 0.8, seed 0".
std::string sampling_words(const SamplingParams& s);

// The facts of one method's run, as [[label, value], ...]: method (title, registry name and what
// it drafts with), drafter, drafting shape, the method's own parameters, the speculation policy.
nlohmann::json method_facts(const DecodeArgs& a);

// The facts every method of a page shares, as [[label, value], ...]: the target model, backend,
// sampling, the token limit and the prompt (`prompt_text` as shown, `prompt_tokens` its length).
nlohmann::json context_facts(const DecodeArgs& a, const std::string& model, const SamplingParams& sampling,
                             const std::string& prompt_text, int prompt_tokens);

}  // namespace specdec::cli
