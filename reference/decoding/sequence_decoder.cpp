#include "reference/decoding/sequence_decoder.hpp"

#include <algorithm>
#include <chrono>

#include "reference/core/error.hpp"

namespace specdec {

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int decoder_cache_capacity(const LanguageModel& target, const Proposer* proposer, std::size_t prompt_len,
                           const GenerationOptions& options) {
  const int headroom = proposer ? proposer->max_nodes() + 1 : 0;
  const int needed = checked_capacity(prompt_len, options.max_new_tokens, headroom, target.config().max_position_embeddings);
  return options.cache_capacity > 0 ? options.cache_capacity : needed;
}

namespace {

// Appends rows `keep` of `src` (when it has any) below the first `rows` rows of `store`.
void append_rows(Matrix& store, int rows, const Matrix& src, const std::vector<int>& keep) {
  if (src.size() == 0) return;
  const Eigen::Index need = rows + static_cast<Eigen::Index>(keep.size());
  if (store.rows() < need) store.conservativeResize(std::max<Eigen::Index>(2 * store.rows(), need + 64), src.cols());
  for (std::size_t i = 0; i < keep.size(); ++i) store.row(rows + static_cast<Eigen::Index>(i)) = src.row(keep[i]);
}

}  // namespace

SequenceDecoder::SequenceDecoder(const LanguageModel& target, KVCache& cache, Proposer* proposer,
                                 const TokenAcceptor& acceptor, std::vector<int32_t> prompt,
                                 const SamplingParams& sampling, const GenerationOptions& options,
                                 DecodeObserver* observer)
    : target_(target),
      cache_(cache),
      proposer_(proposer),
      acceptor_(acceptor),
      sampling_(sampling),
      options_(options),
      observer_(observer),
      sequence_(std::move(prompt)) {
  checked_capacity(sequence_.size(), options_.max_new_tokens, 0, target_.config().max_position_embeddings);
  if (cache_.length() != 0) throw Error("decoding: the target cache must start empty");
  sampling_.validate();
  prompt_len_ = static_cast<int>(sequence_.size());
  result_.stop_reason = "max_tokens";
  // Greedy verification with no observer needs only the target's choice at each row: the backend
  // picks it where the logits are (a GPU sends K + 1 ids back instead of K + 1 rows).
  argmax_only_ = !observer_ && (proposer_ ? acceptor_.takes_argmax(sampling_)
                                          : sampling_.mode == SamplingParams::Mode::greedy);
  request_.tokens = sequence_;
  request_.logit_rows = {prompt_len_ - 1};
  request_.argmax_only = argmax_only_;
  if (proposer_) {
    request_.final_hidden = proposer_->wants_final_hidden();
    request_.aux_layers = proposer_->wanted_aux_layers();
  }
}

const ForwardRequest& SequenceDecoder::request() const {
  if (phase_ != Phase::prefill && phase_ != Phase::verify) {
    throw Error("SequenceDecoder: no target forward is due in this phase");
  }
  return request_;
}

void SequenceDecoder::absorb(ForwardResult out, int64_t forward_ns) {
  if (phase_ == Phase::prefill) {
    absorb_prefill(out, forward_ns);
  } else if (phase_ == Phase::verify) {
    absorb_verify(out, forward_ns);
  } else {
    throw Error("SequenceDecoder: absorb called when no target forward was due");
  }
}

void SequenceDecoder::finish() {
  finish_ns_ = monotonic_ns();
  result_.stats.decode_ns = finish_ns_ - decode_start_ns_;
  phase_ = Phase::done;
  if (observer_) observer_->on_finish(result_.tokens, result_.stop_reason);
}

void SequenceDecoder::absorb_prefill(const ForwardResult& pre, int64_t forward_ns) {
  const ModelConfig& c = target_.config();
  GenerationStats& st = result_.stats;
  st.prefill_ns = forward_ns;
  st.target_forwards = 1;
  if (observer_) observer_->on_prefill(sequence_, forward_ns);  // the prompt: nothing is emitted yet
  decode_start_ns_ = monotonic_ns();
  if (options_.max_new_tokens == 0) return finish();

  std::vector<int> all_rows(static_cast<std::size_t>(prompt_len_));
  for (int i = 0; i < prompt_len_; ++i) all_rows[static_cast<std::size_t>(i)] = i;
  append_rows(final_hidden_, state_rows_, pre.final_hidden, all_rows);
  append_rows(aux_hidden_, state_rows_, pre.aux_hidden, all_rows);
  state_rows_ += prompt_len_;

  // The first token comes from the prompt's last logits, exactly as in sequential decoding.
  const int32_t first = argmax_only_ ? pre.argmax[0]
                                     : sample_token(pre.logits.data(), c.vocab_size, sampling_, options_.sequence,
                                                    static_cast<uint32_t>(prompt_len_));
  first_token_ns_ = monotonic_ns();
  sequence_.push_back(first);
  result_.tokens.push_back(first);
  if (observer_) observer_->on_sequential_step({0, prompt_len_, pre.logits.data(), c.vocab_size, first, forward_ns});
  const bool eos = options_.stop_at_eos && c.is_eos(first);
  if (eos) result_.stop_reason = "eos";
  if (eos || options_.max_new_tokens == 1) return finish();
  phase_ = Phase::draft;
}

void SequenceDecoder::draft() {
  if (phase_ != Phase::draft) throw Error("SequenceDecoder: draft called out of turn");
  const ModelConfig& c = target_.config();
  const int base = static_cast<int>(sequence_.size()) - 1;  // the pending token's position and cache slot
  request_ = ForwardRequest();
  request_.argmax_only = argmax_only_;
  if (!proposer_) {
    request_.tokens = {sequence_.back()};
    request_.logit_rows = {0};
    phase_ = Phase::verify;
    return;
  }
  const int64_t t0 = monotonic_ns();
  DraftContext ctx;
  ctx.sequence = &sequence_;
  ctx.committed = base;
  ctx.final_hidden = &final_hidden_;
  ctx.aux_hidden = &aux_hidden_;
  ctx.sampling = sampling_;
  ctx.sequence_id = options_.sequence;
  proposal_ = proposer_->propose(ctx);
  draft_ns_ = monotonic_ns() - t0;
  const DraftTree& tree = proposal_.tree;
  tree.validate(c.vocab_size);
  if (tree.size() > proposer_->max_nodes()) {
    throw Error(proposer_->name() + ": proposed " + std::to_string(tree.size()) +
                " draft nodes, more than its declared maximum " + std::to_string(proposer_->max_nodes()));
  }
  result_.stats.drafter_forwards += proposal_.drafter_forwards;

  // Verify [pending, drafts...] in one target forward; node n sits at slot base + 1 + n.
  request_.tokens.push_back(sequence_.back());
  request_.positions.push_back(base);
  std::vector<int> parents = {-1};
  for (int n = 0; n < tree.size(); ++n) {
    request_.tokens.push_back(tree.tokens[static_cast<std::size_t>(n)]);
    request_.positions.push_back(base + tree.depth(n));
    parents.push_back(tree.parents[static_cast<std::size_t>(n)] + 1);
  }
  request_.mask = AttentionMask::tree(base, parents);
  for (int r = 0; r <= tree.size(); ++r) request_.logit_rows.push_back(r);
  request_.final_hidden = proposer_->wants_final_hidden();
  request_.aux_layers = proposer_->wanted_aux_layers();
  phase_ = Phase::verify;
}

void SequenceDecoder::absorb_verify(const ForwardResult& out, int64_t forward_ns) {
  const ModelConfig& c = target_.config();
  GenerationStats& st = result_.stats;
  const int64_t t0 = monotonic_ns();
  ++st.target_forwards;
  ++st.steps;

  if (!proposer_) {  // sequential: the target's choice at the next position
    const auto index = static_cast<int>(result_.tokens.size());
    const int32_t position = static_cast<int32_t>(sequence_.size());
    const int32_t token = argmax_only_ ? out.argmax[0]
                                       : sample_token(out.logits.data(), c.vocab_size, sampling_, options_.sequence,
                                                      static_cast<uint32_t>(position));
    ++st.emitted_in_steps;
    result_.tokens.push_back(token);
    sequence_.push_back(token);
    if (observer_) observer_->on_sequential_step({index, position, out.logits.data(), c.vocab_size, token, forward_ns});
    const bool eos = options_.stop_at_eos && c.is_eos(token);
    if (eos) result_.stop_reason = "eos";
    if (eos || static_cast<int>(result_.tokens.size()) == options_.max_new_tokens) return finish();
    phase_ = Phase::draft;
    return;
  }

  const int base = static_cast<int>(sequence_.size()) - 1;
  const DraftTree& tree = proposal_.tree;
  VerifyInput in;
  in.tree = &tree;
  in.target_logits = argmax_only_ ? nullptr : &out.logits;
  in.target_argmax = argmax_only_ ? &out.argmax : nullptr;
  in.vocab = c.vocab_size;
  in.draft_probs = &proposal_.draft_probs;
  in.sampling = sampling_;
  in.sequence = options_.sequence;
  in.root_position = base + 1;
  const VerifyResult decision = acceptor_.verify(in);

  // Keep the pending token and the accepted path in the cache and the state store.
  std::vector<int> keep_rows = {0};
  std::vector<int> keep_slots = {base};
  for (int n : decision.accepted_nodes) {
    keep_rows.push_back(1 + n);
    keep_slots.push_back(base + 1 + n);
  }
  cache_.gather(base, keep_slots);
  append_rows(final_hidden_, state_rows_, out.final_hidden, keep_rows);
  append_rows(aux_hidden_, state_rows_, out.aux_hidden, keep_rows);
  state_rows_ += static_cast<int>(keep_rows.size());
  const int64_t verify_ns = forward_ns + (monotonic_ns() - t0);

  // Statistics.
  const int accepted = static_cast<int>(decision.accepted_nodes.size());
  st.drafted_tokens += tree.size();
  st.accepted_tokens += accepted;
  st.emitted_in_steps += static_cast<int>(decision.emitted.size());
  if (static_cast<int>(st.accepted_per_step.size()) <= accepted) st.accepted_per_step.resize(accepted + 1, 0);
  ++st.accepted_per_step[static_cast<std::size_t>(accepted)];
  int max_depth = 0;
  for (int n = 0; n < tree.size(); ++n) max_depth = std::max(max_depth, tree.depth(n));
  if (static_cast<int>(st.depth_attempts.size()) < max_depth) {
    st.depth_attempts.resize(max_depth, 0);
    st.depth_accepts.resize(max_depth, 0);
  }
  for (int d = 1; d <= max_depth && d <= accepted + 1; ++d) {
    // Depth d was attempted if the accepted path reached its parent and that parent has children.
    const int parent = d == 1 ? -1 : decision.accepted_nodes[static_cast<std::size_t>(d - 2)];
    if (tree.children(parent).empty()) break;
    ++st.depth_attempts[static_cast<std::size_t>(d - 1)];
    if (d <= accepted) ++st.depth_accepts[static_cast<std::size_t>(d - 1)];
  }

  // Emit, stopping at EOS or max_new_tokens.
  std::vector<int32_t> emitted;
  bool stop = false;
  for (int32_t t : decision.emitted) {
    emitted.push_back(t);
    result_.tokens.push_back(t);
    sequence_.push_back(t);
    if (options_.stop_at_eos && c.is_eos(t)) {
      result_.stop_reason = "eos";
      stop = true;
      break;
    }
    if (static_cast<int>(result_.tokens.size()) == options_.max_new_tokens) {
      stop = true;
      break;
    }
  }
  if (stop) cache_.truncate(static_cast<int>(sequence_.size()) - 1);  // drop accepted tokens cut off the output
  if (observer_) {
    SpeculativeStep s;
    s.index = st.steps;
    s.root_position = base + 1;
    s.pending_token = request_.tokens[0];
    s.tree = &tree;
    s.draft_probs = &proposal_.draft_probs;
    s.target_logits = &out.logits;
    s.verify = &decision;
    s.emitted = std::move(emitted);
    s.drafter_forwards = proposal_.drafter_forwards;
    s.draft_ns = draft_ns_;
    s.verify_ns = verify_ns;
    observer_->on_speculative_step(s);
  }
  if (stop) return finish();
  phase_ = Phase::draft;
}

GenerationResult decode_alone(const LanguageModel& target, SequenceDecoder& decoder) {
  while (!decoder.done()) {
    if (decoder.phase() == SequenceDecoder::Phase::draft) {
      decoder.draft();
      continue;
    }
    const int64_t t0 = monotonic_ns();
    ForwardResult out = target.forward(decoder.cache(), decoder.request());
    decoder.absorb(std::move(out), monotonic_ns() - t0);
  }
  return decoder.result();
}

}  // namespace specdec
