#pragma once
// How one token is chosen from logits: greedy, temperature / top-k / top-p sampling, or coupled
// (Gumbel-max) sampling. Recorded into traces and read from JSON configs.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace specdec {

struct SamplingParams {
  enum class Mode {
    greedy,   // argmax of the logits
    sample,   // inverse-CDF sampling with one uniform per position
    coupled,  // Gumbel-max: argmax(logits/T + Gumbel noise keyed by position and token id)
  };

  Mode mode = Mode::greedy;
  double temperature = 1.0;  // > 0 for sample/coupled; ignored by greedy
  int top_k = 0;             // keep the k most likely tokens; 0 = off, k >= vocab = off
  double top_p = 1.0;        // keep the smallest most-likely set of mass >= top_p; 1 = off
  uint64_t seed = 0;         // Philox key (reference/sampling/counter_rng.hpp)

  // Throws specdec::Error naming the bad field and the accepted range.
  void validate() const;

  // "mode=sample temperature=0.7 top_k=0 top_p=1 seed=0" (numbers round-trip exactly).
  std::string to_string() const;

  bool operator==(const SamplingParams&) const = default;
};

// "greedy", "sample", "coupled".
std::string to_string(SamplingParams::Mode mode);
// Inverse of to_string(Mode); throws specdec::Error for any other name.
SamplingParams::Mode parse_sampling_mode(const std::string& name);

// JSON form: {"mode": "sample", "temperature": 0.7, "top_k": 0, "top_p": 1.0, "seed": 0}.
// from_json: every key is optional (defaults above), unknown keys and wrong types are errors,
// and the result is validated. Both throw specdec::Error; usable as j.get<SamplingParams>().
void to_json(nlohmann::json& j, const SamplingParams& params);
void from_json(const nlohmann::json& j, SamplingParams& params);

}  // namespace specdec
