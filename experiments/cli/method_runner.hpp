#pragma once
// Turns the decoding options of the command line into a run: loads the drafter a method needs,
// builds its Proposer and the acceptor, and decodes with the one algorithm that serves it.
#include <memory>
#include <vector>

#include "experiments/cli/options.hpp"
#include "reference/decoding/decode_observer.hpp"
#include "reference/decoding/generation.hpp"

namespace specdec::cli {

// Names accepted by --method.
const std::vector<std::string>& method_names();

// Validates the method and its options (before any model is loaded).
void check_method_args(const DecodeArgs& a);

// Everything a decoding subcommand needs, from its parsed options: validated method, generation
// and sampling settings (checked before any model is loaded), the target and the prompt tokens.
struct DecodeJob {
  GenerationOptions options;
  SamplingParams sampling;
  LoadedModel target;
  std::vector<int32_t> prompt;
};
DecodeJob prepare_decode(const DecodeArgs& a);

// Loads the drafter model a method needs (none for sequential).
std::optional<LoadedModel> load_drafter(const DecodeArgs& a);

// Runs the method of `a` on the loaded target with the drafter from load_drafter (loaded here
// when null and needed).
GenerationResult run_method(const DecodeArgs& a, const LoadedModel& target, const std::vector<int32_t>& prompt,
                            const SamplingParams& sampling, const GenerationOptions& options,
                            DecodeObserver* observer = nullptr, const LoadedModel* drafter = nullptr);

// The method configuration as JSON (for traces and --json output).
nlohmann::json method_json(const DecodeArgs& a);

}  // namespace specdec::cli
