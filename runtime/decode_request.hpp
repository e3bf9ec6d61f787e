#pragma once
// A decoding run as the commands, sweeps and the Python module describe it: the options
// (DecodeArgs), the target loaded on a backend (LoadedModel), and the prompt, sampling and
// generation settings derived from them. Messages name the command-line options.
#include <memory>
#include <string>
#include <vector>

#include "reference/decoding/generation.hpp"
#include "reference/drafters/target_tensors.hpp"
#include "reference/methods/method_spec.hpp"
#include "reference/model/transformer.hpp"
#include "reference/policies/policy_spec.hpp"
#include "reference/sampling/sampling_params.hpp"
#include "text/tokenizer.hpp"

namespace specdec {

struct DecodeArgs {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  MethodSpec method;            // --method and its shape options (--k, --tree, ...)
  PolicySpec policy;            // --policy: each step's draft depth (reference/policies)
  double draft_budget_ms = 0;   // --draft-budget-ms: a slower proposal switches its drafter off (0: none)
  // --fallback-method / --fallback-drafter: a second drafter, used after the first is switched off
  // (its shape options are the method's: --k, --tree, ...). Empty: none.
  std::string fallback_method;
  std::string fallback_drafter;
  // --drafter-fault KIND@STEP (throw | nan | slow): a fault injected into the primary drafter at
  // that decoding step, to exercise fallback (runtime/drafter_fault.hpp). Empty: none.
  std::string drafter_fault;
  std::string drafter;          // draft LM (draft) or EAGLE / EAGLE-3 / P-EAGLE head directory
  std::string sampling = "greedy";
  double temperature = 1.0;
  int top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  int max_new_tokens = 32;
  bool ignore_eos = false;
  // The sequence id keying the random streams (GenerationOptions::sequence): 0 for a command-line
  // run; a trace's recorded "sequence" when one is replayed.
  uint32_t sequence = 0;
  int threads = 0;
  std::string backend = "reference";  // forward implementation of the target and the draft LM
  bool json = false;
};

struct LoadedModel;
// Loads the checkpoint at `path` into `backend` (the reference Transformer for "reference").
// Throws specdec::Error for an unknown or unavailable backend before reading.
LoadedModel load_model(const std::string& path, const std::string& backend = "reference");

// A checkpoint loaded for decoding. Target forwards go to forward_model(): the backend chosen with
// --backend. The reference Transformer (fp32 weights) is loaded only for the reference backend or
// where something asks for it (reference(); validation), so a run on another backend holds only
// that backend's weights. EAGLE-family and MTP heads bind to head_target(): the reference when it
// is loaded; else, on a backend that lends its own copies to its heads (the cpu backend), the
// config alone; else the target's fp32 embeddings and LM head alone. The fingerprint (of the fp32
// weights, fingerprint.hpp) is computed on first use, streamed from the checkpoint when the
// reference is not loaded.
struct LoadedModel {
  std::string path;
  ModelConfig config;
  std::string backend = "reference";
  std::unique_ptr<LanguageModel> backend_model;  // null for the reference backend
  std::shared_ptr<const text::Tokenizer> tokenizer;  // null: prompts and outputs as token ids
  std::string stored_dtype;

  // The reference Transformer, loaded on first use (one thread at a time).
  const Transformer& reference() const;
  // Moves the reference out (loading it first): a draft LM on the reference backend.
  std::unique_ptr<Transformer> take_reference();
  bool reference_loaded() const { return model_ != nullptr; }
  // What a drafter head shares with this target, loaded on first use (one thread at a time).
  TargetTensors head_target() const;
  const std::string& fingerprint() const;
  const LanguageModel& forward_model() const {
    if (backend_model) return *backend_model;
    return reference();
  }

 private:
  mutable std::unique_ptr<Transformer> model_;
  struct SharedTensors {  // on the heap: a head's view stays valid when the LoadedModel moves
    ModelConfig config;
    Matrix embed_tokens, lm_head;  // [V, H]; lm_head empty when tied
  };
  mutable std::unique_ptr<SharedTensors> shared_;
  mutable std::string fingerprint_;
  friend LoadedModel load_model(const std::string& path, const std::string& backend);
};

// The prompt as token ids: --prompt-ids "1,2,3" (as given) or --prompt TEXT (encoded by the
// checkpoint's tokenizer with what it adds around a prompt, typically BOS).
std::vector<int32_t> prompt_tokens(const DecodeArgs& a, const LoadedModel& m);
SamplingParams sampling_params(const DecodeArgs& a);
GenerationOptions generation_options(const DecodeArgs& a);
// Applies --threads (0 = the cores other processes are not using now: automatic_thread_count).
void apply_threads(int threads);

}  // namespace specdec
