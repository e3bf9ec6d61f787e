#pragma once
// EAGLE drafting with an EAGLE-1 or EAGLE-3 head or MTP modules (REFERENCES.md): a chain of K
// tokens, a static tree from a choices list (EAGLE's mc_sim_7b_63 or the user's), or an EAGLE-2
// dynamic tree (top-k per step, as SGLang drafts MTP trees).
//
// Drafter position i pairs the target's feature f_i with token t_{i+1} and predicts t_{i+2}. Each
// proposal catches the drafter cache up to the committed pairs, the last one being
// (f_{committed−1}, pending token), whose logits give the first draft level. Deeper levels feed
// the head's own output back as the feature (EAGLE-1 and MTP through fc again, EAGLE-3 as a
// projected row that skips fc). The drafted entries are dropped afterwards.
//
// MTP with n modules: the forward that drafts depth d + 1 runs module d mod n (vLLM's rule; the root
// forward is module 0); each module keeps its own cache of the committed pairs and sees only the
// drafted entries it computed itself. Trees draft with one module (SGLang's NEXTN).
#include <optional>
#include <string>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "reference/drafting/eagle_pair_cache.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/drafting/tree_choices.hpp"

namespace specdec {

enum class EagleShape {
  chain,         // K tokens, each chosen by choose_draft_token (greedy / coupled / sampled)
  static_tree,   // node = the rank-r candidate (top-k of the drafter at its parent); deterministic
  dynamic_tree,  // EAGLE-2: expand by cumulative log-probability, rerank; deterministic
};

// "chain" | "tree" | "dynamic"
std::string eagle_shape_name(EagleShape shape);
// Inverse of eagle_shape_name; throws specdec::Error listing the accepted names.
EagleShape parse_eagle_shape(const std::string& name);

// What an MTP module's chained step reads as its feature (the engines differ; methods/mtp.cpp):
// prenorm — the decoder layer's output before the module's final norm (the DeepSeek-V3 report's
// h_i^k; vLLM's deepseek_mtp.py feeds back hidden + residual); normed — after the final norm
// (SGLang's deepseek_nextn.py, Qwen3-Next, MiMo and the speculators library).
enum class MtpFeedback { prenorm, normed };

struct EagleOptions {
  EagleShape shape = EagleShape::chain;
  int k = 4;                             // chain: draft tokens per step, >= 1
  TreeChoices choices = mc_sim_7b_63();  // static tree: paths of child ranks
  // EAGLE-2 dynamic tree (SafeAILab EAGLE defaults): `depth` expansions of the top_k frontier
  // after the root pass (the tree is at most depth + 1 deep), then the best total_tokens − 1
  // nodes are kept (total_tokens counts the root, as EAGLE does).
  int depth = 7;          // >= 1
  int top_k = 10;         // in [1, draft vocabulary]
  int total_tokens = 60;  // >= 2
  // MTP modules only.
  MtpFeedback feedback = MtpFeedback::prenorm;
  bool zero_embedding_at_position_0 = false;    // vLLM: the pair at position 0 gets no embedding
  std::vector<const EagleHead*> extra_modules;  // modules 1..n−1 of an n-module checkpoint
};

class EagleProposer final : public Proposer {
 public:
  // `head` (EAGLE-1 or EAGLE-3) must outlive the proposer. `cache_capacity`: the longest sequence
  // (prompt + generated tokens) it will draft for. Throws on invalid options (K < 1, tree ranks
  // beyond the draft vocabulary, top_k outside [1, Vd], ...) or a P-EAGLE head.
  EagleProposer(const EagleHead& head, EagleOptions options, int cache_capacity);

  std::string name() const override;  // e.g. "eagle3-dynamic"
  bool wants_final_hidden() const override;
  std::vector<int> wanted_aux_layers() const override;
  int max_nodes() const override { return max_nodes_; }
  int max_depth() const override;
  Proposal propose(const DraftContext& context) override;

  const EagleHead& head() const { return head_; }
  const EagleOptions& options() const { return options_; }
  // The drafter cache (module 0's); between proposals it holds exactly the committed pairs.
  const EaglePairCache& pair_cache() const { return pairs_.front(); }

 private:
  // The first forward of every draft shape: the head catches up on the pairs committed since the
  // last proposal, with logits at the newest. Returns its logits (1, Vd) and its output at that
  // pair, hidden (1, H), the feature the first drafts are paired with; counts the forward in p.
  EagleHead::Output root_forward(const DraftContext& context, Proposal& p);
  // The feature a chained step of `module` reads after it output `hidden` (R, H): the output itself,
  // or an MTP module's final norm of it (MtpFeedback::normed).
  Matrix fed_back(const EagleHead& module, const Matrix& hidden) const;
  Proposal propose_chain(const DraftContext& context);
  Proposal propose_static_tree(const DraftContext& context);
  Proposal propose_dynamic_tree(const DraftContext& context);

  const EagleHead& head_;
  EagleOptions options_;
  std::vector<const EagleHead*> modules_;  // head_, then options_.extra_modules
  TreeShape shape_;     // static tree only
  int max_nodes_ = 0;
  int draft_slots_ = 0;  // drafted entries one proposal appends to the drafter cache
  std::vector<EaglePairCache> pairs_;  // one per module
};

}  // namespace specdec
