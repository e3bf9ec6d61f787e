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
#include <cstdint>
#include <vector>

#include "reference/acceptance/acceptor.hpp"
#include "reference/decoding/decode_observer.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/model/language_model.hpp"
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
                  DecodeObserver* observer = nullptr);

  Phase phase() const { return phase_; }
  bool done() const { return phase_ == Phase::done; }
  // Whether draft() asks a proposer (false: sequential decoding, whose draft is just the pending token).
  bool has_drafter() const { return proposer_ != nullptr; }
  KVCache& cache() const { return cache_; }
  // The target forward this sequence needs now (phase prefill or verify); valid until absorb.
  const ForwardRequest& request() const;
  // Phase draft: asks the proposer for a draft after the pending token (sequential: none) and
  // builds the verify request. Moves to phase verify.
  void draft();
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

  const LanguageModel& target_;
  KVCache& cache_;
  Proposer* proposer_;
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

// The KV-cache capacity a SequenceDecoder needs (checked_capacity with the proposer's draft slots);
// options.cache_capacity when set.
int decoder_cache_capacity(const LanguageModel& target, const Proposer* proposer, std::size_t prompt_len,
                           const GenerationOptions& options);

// Monotonic clock in nanoseconds (the decoders' timestamps).
int64_t monotonic_ns();

}  // namespace specdec
