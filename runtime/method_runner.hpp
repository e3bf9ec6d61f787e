#pragma once
// Turns the decoding options of the command line into a run: loads the drafter a method needs,
// builds its Proposer and the acceptor, and decodes with the one algorithm that serves it.
#include <memory>
#include <vector>

#include "runtime/decode_request.hpp"
#include "reference/methods/method_spec.hpp"
#include "reference/decoding/decode_observer.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/decoding/speculation_control.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "reference/drafters/medusa_heads.hpp"
#include "reference/drafting/proposer.hpp"

namespace specdec {

// Validates the method and its options, and that a speculative method names a drafter (before
// any model is loaded); likewise --draft-budget-ms, --fallback-method / --fallback-drafter and
// --drafter-fault.
void check_method_args(const DecodeArgs& a);

// The run of the fallback drafter of `a` (--fallback-method, --fallback-drafter, the shape options
// of `a`): `a` with that method and drafter and no fallback or fault of its own. Throws
// specdec::Error when the fallback method does not draft or has no drafter given.
DecodeArgs fallback_args(const DecodeArgs& a);

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
  std::unique_ptr<Transformer> model;            // --method draft: the draft LM in the reference
  std::unique_ptr<LanguageModel> backend_model;  // --method draft on another backend (--backend)
  std::unique_ptr<EagleHead> head;               // --method eagle | eagle3 | peagle | mtp (module 0)
  std::vector<std::unique_ptr<EagleHead>> extra_modules;  // --method mtp: modules 1..n−1 of an n-module checkpoint
  std::unique_ptr<MedusaHeads> medusa;           // --method medusa
  // What the sequences of one run share (MethodEntry::make_run_state: suffix decoding's responses).
  std::shared_ptr<MethodRunState> run_state;

  // The draft LM's forwards go here: the --backend copy when there is one, else the reference.
  const LanguageModel* draft_lm() const { return backend_model ? backend_model.get() : model.get(); }
};
// Loads and checks the drafter of `a` against the target (none for sequential). A draft LM is
// loaded into a.backend too; an EAGLE-family head is bound to target.model (its embeddings and LM
// head) and computes on a.backend (bind_head); Medusa heads are checked against the target's
// config and compute on a.backend (bind_medusa).
std::optional<LoadedDrafter> load_drafter(const DecodeArgs& a, const LoadedModel& target);

// The Proposer of the speculative method of `a` (null for sequential), for sequences of up to
// `capacity` tokens. `draft_lm` overrides the model a draft LM's forwards go to (default:
// drafter.draft_lm()); validation and benchmarks interpose wrappers there. `head` likewise
// overrides drafter.head (validation runs one head on two backends), `medusa` drafter.medusa.
std::unique_ptr<Proposer> make_proposer(const DecodeArgs& a, const LoadedModel& target, const LoadedDrafter* drafter,
                                        int capacity, const LanguageModel* draft_lm = nullptr,
                                        const EagleHead* head = nullptr, const MedusaHeads* medusa = nullptr);

// The policy and draft budget of `a` for one sequence (`policy`: made by make_policy(a.policy)).
SpeculationControl speculation_control(const DecodeArgs& a, SpeculationPolicy* policy);

// Runs the method of `a` on the loaded target's backend (forward_model) with the drafter from
// load_drafter (loaded here when null and needed). `acceptor` replaces the default rule of a
// speculative method (default_acceptor(sampling)); --forced-acceptance passes a ForcedAcceptor.
GenerationResult run_method(const DecodeArgs& a, const LoadedModel& target, const std::vector<int32_t>& prompt,
                            const SamplingParams& sampling, const GenerationOptions& options,
                            DecodeObserver* observer = nullptr, const LoadedDrafter* drafter = nullptr,
                            const TokenAcceptor* acceptor = nullptr);

// The inverse of the run configuration `specdec record` writes into a trace's config_json: the
// method options of `a` (method, drafter, k, tree, ...), the speculation policy (fixed when the
// trace records none), max_new_tokens / ignore_eos and the sequence id (0 when the trace records
// none). The draft budget, fallback drafter and injected fault are recorded but not read back:
// a replay drafts with the recorded method's drafter under the recorded policy. Throws
// specdec::Error naming the trace field that is missing or malformed.
void decode_args_from_trace_config(const std::string& config_json, const std::string& source, DecodeArgs& a);

// The method configuration as JSON (for traces and --json output).
nlohmann::json method_json(const DecodeArgs& a);

}  // namespace specdec
