#pragma once
// Turns the decoding options of the command line into a run: loads the drafter a method needs,
// builds its Proposer and the acceptor, and decodes with the one algorithm that serves it.
#include <memory>
#include <vector>

#include "experiments/cli/options.hpp"
#include "reference/decoding/decode_observer.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafters/eagle_head.hpp"

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

// The drafter a speculative method uses: a draft language model, or an EAGLE-family head bound
// to the target (which must outlive it).
struct LoadedDrafter {
  std::string path;
  std::string fingerprint;
  std::string config_json;
  std::unique_ptr<Transformer> model;  // --method draft
  std::unique_ptr<EagleHead> head;     // --method eagle | eagle3 | peagle
};
// Loads and checks the drafter of `a` against the target (none for sequential).
std::optional<LoadedDrafter> load_drafter(const DecodeArgs& a, const LoadedModel& target);

// Runs the method of `a` on the loaded target with the drafter from load_drafter (loaded here
// when null and needed).
GenerationResult run_method(const DecodeArgs& a, const LoadedModel& target, const std::vector<int32_t>& prompt,
                            const SamplingParams& sampling, const GenerationOptions& options,
                            DecodeObserver* observer = nullptr, const LoadedDrafter* drafter = nullptr);

// The method configuration as JSON (for traces and --json output).
nlohmann::json method_json(const DecodeArgs& a);

}  // namespace specdec::cli
