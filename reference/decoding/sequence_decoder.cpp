#include "reference/decoding/sequence_decoder.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "reference/core/error.hpp"

namespace specdec {

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int decoder_cache_capacity(const LanguageModel& target, const Proposer* proposer, std::size_t prompt_len,
                           const GenerationOptions& options, const std::vector<Proposer*>& fallbacks) {
  int headroom = proposer ? proposer->max_nodes() + 1 : 0;
  for (const Proposer* f : fallbacks) headroom = std::max(headroom, f->max_nodes() + 1);
  const int needed = checked_capacity(prompt_len, options.max_new_tokens, headroom, target.config().max_position_embeddings);
  return options.cache_capacity > 0 ? options.cache_capacity : needed;
}

namespace {

std::string format_ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) * 1e-6);
  return buf;
}

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
                                 DecodeObserver* observer, SpeculationControl control)
    : target_(target),
      cache_(cache),
      proposer_(proposer),
      control_(std::move(control)),
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
    drafters_.push_back(proposer_);
    for (Proposer* f : control_.fallbacks) {
      if (!f) throw Error("decoding: a fallback drafter is null");
      // The state store keeps one set of auxiliary layers for every drafter.
      if (!f->wanted_aux_layers().empty() && !proposer_->wanted_aux_layers().empty() &&
          f->wanted_aux_layers() != proposer_->wanted_aux_layers()) {
        throw Error("decoding: fallback drafter " + f->name() + " reads other target layers than " + proposer_->name());
      }
      drafters_.push_back(f);
    }
    for (Proposer* d : drafters_) {
      request_.final_hidden = request_.final_hidden || d->wants_final_hidden();
      if (request_.aux_layers.empty()) request_.aux_layers = d->wanted_aux_layers();
    }
    wants_final_hidden_ = request_.final_hidden;
    aux_layers_ = request_.aux_layers;
  } else if (!control_.fallbacks.empty() || control_.policy) {
    throw Error("decoding: a speculation policy or fallback drafters need a proposer");
  }
  if (control_.draft_budget_ns < 0) throw Error("decoding: the draft time budget must be >= 0");
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

void SequenceDecoder::draft(int batch_size) {
  if (phase_ != Phase::draft) throw Error("SequenceDecoder: draft called out of turn");
  const int base = static_cast<int>(sequence_.size()) - 1;  // the pending token's position and cache slot
  request_ = ForwardRequest();
  request_.argmax_only = argmax_only_;
  if (!proposer_) {
    request_.tokens = {sequence_.back()};
    request_.logit_rows = {0};
    phase_ = Phase::verify;
    return;
  }
  batch_size_ = batch_size;
  propose(batch_size);
  const DraftTree& tree = proposal_.tree;

  // Verify [pending, drafts...] in one target forward; node n sits at slot base + 1 + n. An empty
  // draft (a plain step) verifies the pending token alone.
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
  request_.final_hidden = wants_final_hidden_;
  request_.aux_layers = aux_layers_;
  phase_ = Phase::verify;
}

void SequenceDecoder::switch_off(const std::string& reason) {
  DrafterFallback f;
  f.step = result_.stats.steps + 1;
  f.drafter = drafters_[active_]->name();
  f.reason = reason;
  ++active_;
  f.next = has_drafter() ? drafters_[active_]->name() : "plain decoding";
  if (observer_) observer_->on_fallback(f);
  result_.fallbacks.push_back(std::move(f));
}

void SequenceDecoder::propose(int batch_size) {
  const ModelConfig& c = target_.config();
  proposal_ = Proposal();
  plan_ = StepPlan();
  draft_ns_ = 0;
  if (!has_drafter()) return;  // every drafter was switched off: plain steps
  const int64_t t0 = monotonic_ns();
  const int full = drafters_[active_]->max_depth();
  plan_ = control_.policy ? control_.policy->plan({result_.stats.steps, batch_size, full}) : StepPlan{full, false, 0};
  plan_.depth = std::clamp(plan_.depth, 0, full);
  while (has_drafter() && plan_.depth > 0) {  // depth 0: a plain step
    Proposer& p = *drafters_[active_];
    const int depth = std::min(plan_.depth, p.max_depth());
    DraftContext ctx;
    ctx.sequence = &sequence_;
    ctx.committed = static_cast<int>(sequence_.size()) - 1;
    ctx.prompt_length = prompt_len_;
    ctx.max_length = prompt_len_ + options_.max_new_tokens;
    ctx.final_hidden = &final_hidden_;
    ctx.aux_hidden = &aux_hidden_;
    ctx.sampling = sampling_;
    ctx.sequence_id = options_.sequence;
    ctx.max_depth = depth < p.max_depth() ? depth : 0;
    ctx.stop = plan_.stop_rule ? control_.policy : nullptr;
    const int64_t start = monotonic_ns();
    try {
      proposal_ = p.propose(ctx);
      proposal_.tree.validate(c.vocab_size);
      if (proposal_.tree.size() > p.max_nodes()) {
        throw Error("proposed " + std::to_string(proposal_.tree.size()) + " draft nodes, more than its declared maximum " +
                    std::to_string(p.max_nodes()));
      }
      for (const std::vector<double>& q : proposal_.draft_probs) {
        for (double x : q)
          if (!std::isfinite(x)) throw Error("proposed a draft distribution with a non-finite probability");
      }
    } catch (const std::exception& e) {
      proposal_ = Proposal();
      switch_off(std::string("failed: ") + e.what());
      continue;  // the next drafter drafts this step
    }
    const int64_t took = monotonic_ns() - start;
    result_.stats.drafter_forwards += proposal_.drafter_forwards;
    if (control_.draft_budget_ns > 0 && took > control_.draft_budget_ns) {
      // The draft is valid and is verified; the drafter is not asked again.
      switch_off("took " + format_ms(took) + ", over the budget of " + format_ms(control_.draft_budget_ns));
    }
    if (proposal_.tree.size() < plan_.min_drafts) {
      const int forwards = proposal_.drafter_forwards;
      proposal_ = Proposal();  // too short to verify (llama.cpp's n_min): a plain step
      proposal_.drafter_forwards = forwards;
    }
    break;
  }
  draft_ns_ = monotonic_ns() - t0;
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
  if (tree.size() > 0) {  // a plain step drafted nothing to accept
    if (static_cast<int>(st.accepted_per_step.size()) <= accepted) st.accepted_per_step.resize(accepted + 1, 0);
    ++st.accepted_per_step[static_cast<std::size_t>(accepted)];
  }
  int max_depth = 0;
  for (int n = 0; n < tree.size(); ++n) max_depth = std::max(max_depth, tree.depth(n));
  if (static_cast<int>(st.draft_depth_per_step.size()) <= max_depth) st.draft_depth_per_step.resize(max_depth + 1, 0);
  ++st.draft_depth_per_step[static_cast<std::size_t>(max_depth)];
  if (control_.policy) {
    StepOutcome o;
    o.planned_depth = tree.size() > 0 ? plan_.depth : 0;
    o.drafted_depth = max_depth;
    o.drafted_nodes = tree.size();
    o.accepted = accepted;
    o.confidences = plan_.stop_rule ? &proposal_.confidences : nullptr;
    o.batch_size = batch_size_;
    o.draft_s = static_cast<double>(draft_ns_) * 1e-9;
    o.verify_s = static_cast<double>(verify_ns) * 1e-9;
    control_.policy->observe(o);
  }
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
    s.planned_depth = tree.size() > 0 ? plan_.depth : 0;
    s.confidences = plan_.stop_rule ? &proposal_.confidences : nullptr;
    s.sources = proposal_.sources.empty() ? nullptr : &proposal_.sources;
    if (control_.policy) s.policy_state = control_.policy->state();
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
