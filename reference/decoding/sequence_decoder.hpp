#pragma once
// One sequence's decoding as the steps a loop drives: prefill, then per step draft → verify →
// accept/compact/emit. Both loops use it: the single-sequence loops (sequential.cpp,
// speculative.cpp) hand its requests to LanguageModel::forward, the batched loop (batched.cpp)
// hands every in-flight sequence's request to one LanguageModel::forward_batch. Everything a
// sequence computes (drafts, decisions, random draws keyed by its sequence id and positions) is a
// function of its own state only, so it decodes bitwise the same alone and in any batch.
//
// Without a proposer it is sequential decoding: each step verifies just the pending token and
// emits the target's choice at the next position (sample_token), reported as sequential steps.
//
// With one, a SpeculationControl may steer it: the policy sets each step's draft depth (0: the
// step verifies the pending token alone, an empty draft), and a drafter that fails is switched off
// for the rest of the sequence in favour of the next fallback or plain steps (result().fallbacks).
// Neither changes what is emitted: every step is verified by the same acceptor.
#include <cstdint>
#include <vector>

#include "reference/acceptance/acceptor.hpp"
#include "reference/decoding/decode_observer.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/decoding/speculation_control.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/model/language_model.hpp"
#include "reference/policies/speculation_policy.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {

class SequenceDecoder {
 public:
  enum class Phase {
    prefill,  // request() is the prompt's forward
    draft,    // call draft(); it builds the verify request
    verify,   // request() is [pending, drafts...] under the draft tree's mask
    done,
  };

  // `cache` must be empty and come from target.new_cache with room for the prompt, max_new_tokens
  // and proposer->max_nodes() + 1 draft slots (decoder_cache_capacity). `proposer` null: sequential
  // decoding. The target, cache, proposer, acceptor and observer must outlive the decoder.
  SequenceDecoder(const LanguageModel& target, KVCache& cache, Proposer* proposer, const TokenAcceptor& acceptor,
                  std::vector<int32_t> prompt, const SamplingParams& sampling, const GenerationOptions& options,
                  DecodeObserver* observer = nullptr, SpeculationControl control = {});

  Phase phase() const { return phase_; }
  bool done() const { return phase_ == Phase::done; }
  // Whether draft() may ask a proposer (false: sequential decoding, or every drafter was switched off).
  bool has_drafter() const { return active_ < drafters_.size(); }
  KVCache& cache() const { return cache_; }
  // The target forward this sequence needs now (phase prefill or verify); valid until absorb.
  const ForwardRequest& request() const;
  // Phase draft: asks the policy for this step's depth and the proposer for a draft after the
  // pending token (sequential: none), and builds the verify request. `batch_size`: the sequences
  // decoding in this step (what the policy sees). Moves to phase verify.
  void draft(int batch_size = 1);
  // The target's result for request(), computed in `forward_ns`: accepts, compacts the cache,
  // emits, and moves to phase draft (or done).
  void absorb(ForwardResult result, int64_t forward_ns);

  const GenerationResult& result() const { return result_; }
  // Monotonic clock readings (ns) when the first token was chosen and when the sequence finished.
  int64_t first_token_ns() const { return first_token_ns_; }
  int64_t finish_ns() const { return finish_ns_; }

 private:
  void finish();
  void absorb_prefill(const ForwardResult& out, int64_t forward_ns);
  void absorb_verify(const ForwardResult& out, int64_t forward_ns);
  void emit_first(int32_t token);
  // Asks the active drafters in turn for a proposal within plan_, switching off those that fail.
  void propose(int batch_size);
  void switch_off(const std::string& reason);

  const LanguageModel& target_;
  KVCache& cache_;
  Proposer* proposer_;
  std::vector<Proposer*> drafters_;  // proposer_ then the fallbacks
  std::size_t active_ = 0;           // the drafter in use; drafters_.size(): none left
  SpeculationControl control_;
  StepPlan plan_;
  int batch_size_ = 1;
  bool wants_final_hidden_ = false;  // what the drafters need of every target forward
  std::vector<int> aux_layers_;
  const TokenAcceptor& acceptor_;
  SamplingParams sampling_;
  GenerationOptions options_;
  DecodeObserver* observer_;
  bool argmax_only_ = false;

  Phase phase_ = Phase::prefill;
  std::vector<int32_t> sequence_;  // prompt + emitted tokens; the last one is pending
  int prompt_len_ = 0;
  ForwardRequest request_;
  Proposal proposal_;
  int64_t draft_ns_ = 0;
  int64_t decode_start_ns_ = 0;
  int64_t first_token_ns_ = 0;
  int64_t finish_ns_ = 0;
  GenerationResult result_;
  // Target hidden states of the committed tokens (rows [0, committed)), for the proposer.
  Matrix final_hidden_, aux_hidden_;
  int state_rows_ = 0;
};

// Drives `decoder` to the end alone: each target forward is LanguageModel::forward on its cache.
GenerationResult decode_alone(const LanguageModel& target, SequenceDecoder& decoder);

// The KV-cache capacity a SequenceDecoder needs (checked_capacity with the draft slots of the
// proposer and of `fallbacks`); options.cache_capacity when set.
int decoder_cache_capacity(const LanguageModel& target, const Proposer* proposer, std::size_t prompt_len,
                           const GenerationOptions& options, const std::vector<Proposer*>& fallbacks = {});

// Monotonic clock in nanoseconds (the decoders' timestamps).
int64_t monotonic_ns();

}  // namespace specdec
