#include "reference/decoding/speculative.hpp"

#include <chrono>

#include "reference/core/error.hpp"

namespace specdec {

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Target hidden states of committed tokens, one row per token, grown as tokens are committed.
struct StateStore {
  Matrix final_hidden, aux_hidden;
  int rows = 0;
  void append(const ForwardResult& r, const std::vector<int>& rows_to_keep) {
    auto grow = [&](Matrix& store, const Matrix& src) {
      if (src.size() == 0) return;
      if (store.rows() < rows + static_cast<int>(rows_to_keep.size()))
        store.conservativeResize(std::max<Eigen::Index>(2 * store.rows(), rows + rows_to_keep.size() + 64), src.cols());
      for (size_t i = 0; i < rows_to_keep.size(); ++i) store.row(rows + i) = src.row(rows_to_keep[i]);
    };
    grow(final_hidden, r.final_hidden);
    grow(aux_hidden, r.aux_hidden);
    rows += static_cast<int>(rows_to_keep.size());
  }
};

}  // namespace

GenerationResult decode_speculative(const LanguageModel& target, Proposer& proposer, const TokenAcceptor& acceptor,
                                    const std::vector<int32_t>& prompt, const SamplingParams& sampling,
                                    const GenerationOptions& options, DecodeObserver* observer) {
  const int needed = checked_capacity(prompt.size(), options.max_new_tokens, proposer.max_nodes() + 1,
                                      target.config().max_position_embeddings);
  const int capacity = options.cache_capacity > 0 ? options.cache_capacity : needed;
  auto cache = target.new_cache(capacity);
  return decode_speculative(target, *cache, proposer, acceptor, prompt, sampling, options, observer);
}

GenerationResult decode_speculative(const LanguageModel& target, KVCache& target_cache, Proposer& proposer,
                                    const TokenAcceptor& acceptor, const std::vector<int32_t>& prompt,
                                    const SamplingParams& sampling, const GenerationOptions& options,
                                    DecodeObserver* observer) {
  const ModelConfig& c = target.config();
  checked_capacity(prompt.size(), options.max_new_tokens, 0, c.max_position_embeddings);
  if (target_cache.length() != 0) throw Error("speculative decoding: the target cache must start empty");
  sampling.validate();
  const int prompt_len = static_cast<int>(prompt.size());
  KVCache* cache = &target_cache;

  GenerationResult result;
  result.stop_reason = "max_tokens";
  GenerationStats& st = result.stats;

  // Prefill: the first token comes from the prompt's last logits, exactly as in sequential decoding.
  int64_t t0 = now_ns();
  // Greedy verification with no observer needs only the target's choice at each row: the backend
  // picks it where the logits are (a GPU sends K + 1 ids back instead of K + 1 rows).
  const bool argmax_only = !observer && acceptor.takes_argmax(sampling);
  ForwardRequest prefill;
  prefill.tokens = prompt;
  prefill.logit_rows = {prompt_len - 1};
  prefill.argmax_only = argmax_only;
  prefill.final_hidden = proposer.wants_final_hidden();
  prefill.aux_layers = proposer.wanted_aux_layers();
  ForwardResult pre = target.forward(*cache, prefill);
  st.prefill_ns = now_ns() - t0;
  st.target_forwards = 1;
  if (observer) observer->on_prefill(prompt, st.prefill_ns);
  const int64_t decode_start = now_ns();
  if (options.max_new_tokens == 0) {
    if (observer) observer->on_finish(result.tokens, result.stop_reason);
    return result;
  }

  StateStore states;
  std::vector<int> all_rows(prompt_len);
  for (int i = 0; i < prompt_len; ++i) all_rows[i] = i;
  states.append(pre, all_rows);

  std::vector<int32_t> sequence = prompt;
  const int32_t first =
      argmax_only ? pre.argmax[0] : sample_token(pre.logits.data(), c.vocab_size, sampling, options.sequence, prompt_len);
  sequence.push_back(first);
  result.tokens.push_back(first);
  if (observer) observer->on_sequential_step({0, prompt_len, pre.logits.data(), c.vocab_size, first, st.prefill_ns});
  bool done = (options.stop_at_eos && c.is_eos(first)) || options.max_new_tokens == 1;
  if (options.stop_at_eos && c.is_eos(first)) result.stop_reason = "eos";

  while (!done) {
    const int base = static_cast<int>(sequence.size()) - 1;  // the pending token's position and cache slot
    // Draft.
    t0 = now_ns();
    DraftContext ctx;
    ctx.sequence = &sequence;
    ctx.committed = base;
    ctx.final_hidden = &states.final_hidden;
    ctx.aux_hidden = &states.aux_hidden;
    ctx.sampling = sampling;
    ctx.sequence_id = options.sequence;
    Proposal proposal = proposer.propose(ctx);
    const int64_t draft_ns = now_ns() - t0;
    const DraftTree& tree = proposal.tree;
    tree.validate(c.vocab_size);
    if (tree.size() > proposer.max_nodes()) {
      throw Error(proposer.name() + ": proposed " + std::to_string(tree.size()) + " draft nodes, more than its declared maximum " +
                  std::to_string(proposer.max_nodes()));
    }
    st.drafter_forwards += proposal.drafter_forwards;

    // Verify [pending, drafts...] in one target forward; node n sits at slot base + 1 + n.
    t0 = now_ns();
    ForwardRequest verify;
    verify.tokens.push_back(sequence.back());
    verify.positions.push_back(base);
    std::vector<int> parents = {-1};
    for (int n = 0; n < tree.size(); ++n) {
      verify.tokens.push_back(tree.tokens[n]);
      verify.positions.push_back(base + tree.depth(n));
      parents.push_back(tree.parents[n] + 1);
    }
    verify.mask = AttentionMask::tree(base, parents);
    for (int r = 0; r <= tree.size(); ++r) verify.logit_rows.push_back(r);
    verify.argmax_only = argmax_only;
    verify.final_hidden = proposer.wants_final_hidden();
    verify.aux_layers = proposer.wanted_aux_layers();
    ForwardResult out = target.forward(*cache, verify);
    ++st.target_forwards;

    VerifyInput in;
    in.tree = &tree;
    in.target_logits = argmax_only ? nullptr : &out.logits;
    in.target_argmax = argmax_only ? &out.argmax : nullptr;
    in.vocab = c.vocab_size;
    in.draft_probs = &proposal.draft_probs;
    in.sampling = sampling;
    in.sequence = options.sequence;
    in.root_position = base + 1;
    const VerifyResult decision = acceptor.verify(in);

    // Keep the pending token and the accepted path in the caches and the state store.
    std::vector<int> keep_rows = {0};
    std::vector<int> keep_slots = {base};
    for (int n : decision.accepted_nodes) {
      keep_rows.push_back(1 + n);
      keep_slots.push_back(base + 1 + n);
    }
    cache->gather(base, keep_slots);
    states.append(out, keep_rows);
    const int64_t verify_ns = now_ns() - t0;

    // Statistics.
    ++st.steps;
    st.drafted_tokens += tree.size();
    st.accepted_tokens += static_cast<int>(decision.accepted_nodes.size());
    st.emitted_in_steps += static_cast<int>(decision.emitted.size());
    int max_depth = 0;
    for (int n = 0; n < tree.size(); ++n) max_depth = std::max(max_depth, tree.depth(n));
    if (static_cast<int>(st.depth_attempts.size()) < max_depth) {
      st.depth_attempts.resize(max_depth, 0);
      st.depth_accepts.resize(max_depth, 0);
    }
    const int accepted_depth = static_cast<int>(decision.accepted_nodes.size());
    for (int d = 1; d <= max_depth && d <= accepted_depth + 1; ++d) {
      // Depth d was attempted if the accepted path reached its parent and that parent has children.
      const int parent = d == 1 ? -1 : decision.accepted_nodes[d - 2];
      if (tree.children(parent).empty()) break;
      ++st.depth_attempts[d - 1];
      if (d <= accepted_depth) ++st.depth_accepts[d - 1];
    }

    // Emit, stopping at EOS or max_new_tokens.
    std::vector<int32_t> emitted;
    for (int32_t t : decision.emitted) {
      emitted.push_back(t);
      result.tokens.push_back(t);
      sequence.push_back(t);
      if (options.stop_at_eos && c.is_eos(t)) {
        result.stop_reason = "eos";
        done = true;
        break;
      }
      if (static_cast<int>(result.tokens.size()) == options.max_new_tokens) {
        done = true;
        break;
      }
    }
    if (done) cache->truncate(static_cast<int>(sequence.size()) - 1);  // drop accepted tokens cut off the output
    if (observer) {
      SpeculativeStep s;
      s.index = st.steps;
      s.root_position = base + 1;
      s.pending_token = verify.tokens[0];
      s.tree = &tree;
      s.draft_probs = &proposal.draft_probs;
      s.target_logits = &out.logits;
      s.verify = &decision;
      s.emitted = std::move(emitted);
      s.drafter_forwards = proposal.drafter_forwards;
      s.draft_ns = draft_ns;
      s.verify_ns = verify_ns;
      observer->on_speculative_step(s);
    }
  }
  st.decode_ns = now_ns() - decode_start;
  if (observer) observer->on_finish(result.tokens, result.stop_reason);
  return result;
}

}  // namespace specdec
