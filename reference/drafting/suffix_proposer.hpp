#pragma once
// Suffix decoding as a Proposer (suffix_tree.hpp has the index and the rule). Each sequence keeps
// a local tree over its prompt and output; the run keeps one tree of earlier responses
// (SuffixResponses, shared by its sequences), bounded to the last `max_cached` requests. Each step
// speculates from both — the responses read together with this sequence's own output so far, as
// Arctic Inference's global tree holds it — and keeps the better score (the local one on ties).
//
// Arctic Inference also adds the partial responses of the other requests in flight to its global
// tree as they are generated; here a response joins the shared tree when its sequence finishes,
// so a sequence's drafts never depend on how far its neighbours in a batch have got. With
// max_cached 0 there is no shared tree and every sequence drafts the same alone and in any batch.
#include <memory>
#include <shared_mutex>

#include "reference/drafting/proposer.hpp"
#include "reference/drafting/suffix_tree.hpp"

namespace specdec {

struct SuffixOptions {
  std::string name = "suffix decoding";  // the entry sets its registry name (errors, fallbacks, explain)
  int k = 24;                  // max_spec_tokens: drafts per step at most
  int max_depth = 24;          // tree depth D; the pattern is the last D tokens
  float spec_factor = 1.0f;    // budget = ⌊m · spec_factor + spec_offset⌋
  float spec_offset = 0.0f;
  float min_token_prob = 0.1f;
  int max_cached = 10000;      // responses kept in the shared tree (0: none)
  bool tree = false;           // best-first tree instead of the greedy path
  int max_model_len = 0;       // the model's context: at most max_model_len − L − 1 drafts (vLLM's rule; 0: no limit)
};

// The earlier responses of a run, oldest evicted first.
class SuffixResponses final : public MethodRunState {
 public:
  SuffixResponses(int max_depth, int max_cached);
  // A request starts: its id, in start order.
  int64_t start();
  // Request `id` finished with `response`: it joins the tree, the oldest leave beyond max_cached.
  void finish(int64_t id, std::span<const int32_t> response);
  const SuffixTree& tree() const { return tree_; }
  int max_cached() const { return max_cached_; }
  std::shared_mutex& mutex() const { return mutex_; }

 private:
  SuffixTree tree_;
  int max_cached_;
  int64_t next_ = 0;
  std::deque<int64_t> cached_;
  mutable std::shared_mutex mutex_;
};

class SuffixProposer final : public Proposer {
 public:
  // `responses` may be null (no shared tree).
  SuffixProposer(SuffixOptions options, std::shared_ptr<SuffixResponses> responses);
  ~SuffixProposer() override;

  std::string name() const override { return options_.name; }
  int max_nodes() const override { return options_.k; }
  Proposal propose(const DraftContext& context) override;

 private:
  SuffixOptions options_;
  std::shared_ptr<SuffixResponses> responses_;
  int64_t id_ = -1;              // this request in the shared tree
  SuffixTree local_;             // prompt + output
  SuffixTree own_;               // output alone (read beside the shared responses)
  std::vector<int32_t> seen_;    // the tokens the trees hold
  int prompt_length_ = 0;
};

}  // namespace specdec
