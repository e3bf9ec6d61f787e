#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/eagle_proposer.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/drafting/head_candidates.hpp"
#include "reference/model/ops.hpp"

namespace specdec {
namespace {

// A level of draft nodes fed through the head at once under a tree mask: each row sees the
// committed pairs, its ancestors' entries (appended by earlier levels) and itself.
struct LevelRows {
  std::vector<int32_t> tokens;
  std::vector<const float*> features;  // each H wide (the parent's head output)
  std::vector<std::vector<int>> visible_slots;  // drafter cache slots of each row's ancestors
  int32_t position = 0;
};

EagleHead::Output run_level(const EagleHead& head, KVCache& cache, int committed_pairs, const LevelRows& level) {
  const int rows = static_cast<int>(level.tokens.size());
  const int H = head.config().hidden();
  const int C = cache.length();
  EagleHead::Input in;
  in.tokens = level.tokens;
  in.features.resize(rows, H);  // features: (rows, H) fed-back head outputs
  for (int r = 0; r < rows; ++r) in.features.row(r) = Eigen::Map<const Eigen::RowVectorXf>(level.features[r], H);
  // EAGLE-3 feeds its own output back without fc; EAGLE-1 and MTP send it through fc with the embedding.
  if (!head.config().reads_final_hidden()) in.projected.assign(static_cast<size_t>(rows), 1);
  in.positions.assign(static_cast<size_t>(rows), level.position);
  AttentionMask mask(rows, C + rows);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < committed_pairs; ++c) mask.set(r, c, true);
    for (int s : level.visible_slots[r]) mask.set(r, s, true);
    mask.set(r, C + r, true);
  }
  in.mask = std::move(mask);
  for (int r = 0; r < rows; ++r) in.logit_rows.push_back(r);
  return head.forward(cache, in);
}

}  // namespace

std::string eagle_shape_name(EagleShape shape) {
  switch (shape) {
    case EagleShape::chain: return "chain";
    case EagleShape::static_tree: return "tree";
    case EagleShape::dynamic_tree: return "dynamic";
  }
  return "?";
}

EagleShape parse_eagle_shape(const std::string& name) {
  for (EagleShape s : {EagleShape::chain, EagleShape::static_tree, EagleShape::dynamic_tree}) {
    if (eagle_shape_name(s) == name) return s;
  }
  throw Error("unknown EAGLE draft shape '" + name + "'; expected chain, tree or dynamic");
}

EagleProposer::EagleProposer(const EagleHead& head, EagleOptions options, int cache_capacity)
    : head_(head), options_(std::move(options)) {
  const EagleHeadConfig& c = head.config();
  const std::string who = eagle_kind_name(c.kind) + " " + eagle_shape_name(options_.shape);
  if (c.kind == EagleKind::peagle) {
    throw Error(who + ": a P-EAGLE head drafts all positions in one pass; use the P-EAGLE proposer");
  }
  modules_.push_back(&head);
  for (const EagleHead* m : options_.extra_modules) {
    if (!m || c.kind != EagleKind::mtp || m->config().kind != EagleKind::mtp) {
      throw Error(who + ": further modules are MTP modules given with an MTP module");
    }
    if (m->target() != head.target()) throw Error(who + ": every MTP module must draft for the same target");
    modules_.push_back(m);
  }
  if (c.kind != EagleKind::mtp && (options_.feedback != MtpFeedback::prenorm || options_.zero_embedding_at_position_0)) {
    throw Error(who + ": the feedback variant and the zero embedding at position 0 are MTP options");
  }
  if (modules_.size() > 1 && options_.shape != EagleShape::chain) {
    throw Error(who + ": trees are drafted with one MTP module (as SGLang drafts them); this checkpoint has " +
                std::to_string(modules_.size()) + " modules: draft a chain (module = step mod n, as vLLM)");
  }
  switch (options_.shape) {
    case EagleShape::chain:
      if (options_.k < 1) throw Error(who + ": K must be >= 1 (got " + std::to_string(options_.k) + ")");
      check_draft_limit(who, "K", options_.k, kMaxDraftDepth);
      max_nodes_ = options_.k;
      draft_slots_ = options_.k - 1;  // the last draft needs no forward
      break;
    case EagleShape::static_tree: {
      shape_ = make_tree_shape(options_.choices, who + " choices");
      if (shape_.max_rank() >= c.draft_vocab) {
        throw Error(who + ": the tree uses candidate rank " + std::to_string(shape_.max_rank()) + " but the drafter's vocabulary has only " +
                    std::to_string(c.draft_vocab) + " tokens (ranks must be < " + std::to_string(c.draft_vocab) + ")");
      }
      max_nodes_ = shape_.size();
      for (int n = 0; n < shape_.size(); ++n) draft_slots_ += shape_.has_children(n) ? 1 : 0;
      break;
    }
    case EagleShape::dynamic_tree: {
      if (options_.depth < 1) throw Error(who + ": depth must be >= 1 (got " + std::to_string(options_.depth) + ")");
      if (options_.top_k < 1 || options_.top_k > c.draft_vocab) {
        throw Error(who + ": top_k must be in [1, " + std::to_string(c.draft_vocab) + "] (the drafter's vocabulary), got " +
                    std::to_string(options_.top_k));
      }
      if (options_.total_tokens < 2) {
        throw Error(who + ": total_tokens must be >= 2 (it counts the root), got " + std::to_string(options_.total_tokens));
      }
      check_draft_limit(who, "depth", options_.depth, kMaxDraftDepth);
      check_draft_limit(who, "total_tokens - 1 (draft nodes per step)", options_.total_tokens - 1LL, kMaxDraftNodes);
      // Every expansion records top_k children of each of top_k frontier nodes (top_k^2 per depth).
      check_draft_limit(who, "top_k", options_.top_k, kMaxDraftTopK);
      const long long recorded =
          options_.top_k + static_cast<long long>(options_.depth) * options_.top_k * options_.top_k;
      max_nodes_ = static_cast<int>(std::min<long long>(options_.total_tokens - 1, recorded));
      draft_slots_ = options_.depth * options_.top_k;
      break;
    }
  }
  pairs_.reserve(modules_.size());
  for (const EagleHead* m : modules_) pairs_.emplace_back(*m, cache_capacity, draft_slots_, who);
}

std::string EagleProposer::name() const { return eagle_kind_name(head_.config().kind) + "-" + eagle_shape_name(options_.shape); }

int EagleProposer::max_depth() const {
  switch (options_.shape) {
    case EagleShape::chain: return options_.k;
    case EagleShape::static_tree: return shape_.max_depth();
    case EagleShape::dynamic_tree: return options_.depth + 1;
  }
  return options_.k;
}

bool EagleProposer::wants_final_hidden() const { return head_.config().reads_final_hidden(); }

std::vector<int> EagleProposer::wanted_aux_layers() const {
  return head_.config().reads_final_hidden() ? std::vector<int>{} : head_.config().aux_layers;
}

Matrix EagleProposer::fed_back(const EagleHead& module, const Matrix& hidden) const {
  if (module.config().kind != EagleKind::mtp || options_.feedback == MtpFeedback::prenorm) return hidden;
  return ops::rms_norm(hidden, module.weights().norm, module.config().layer.rms_norm_eps);
}

Proposal EagleProposer::propose(const DraftContext& ctx) {
  try {
    Proposal p;
    switch (options_.shape) {
      case EagleShape::chain: p = propose_chain(ctx); break;
      case EagleShape::static_tree: p = propose_static_tree(ctx); break;
      case EagleShape::dynamic_tree: p = propose_dynamic_tree(ctx); break;
    }
    for (EaglePairCache& c : pairs_) c.roll_back();  // drafted entries came from predicted features: drop them
    return p;
  } catch (...) {
    for (EaglePairCache& c : pairs_) c.reset();
    throw;
  }
}

EagleHead::Output EagleProposer::root_forward(const DraftContext& ctx, Proposal& p) {
  EaglePairCache& pairs = pairs_.front();
  EagleHead::Input in = pairs.catch_up(ctx, draft_slots_);
  const int last = static_cast<int>(in.tokens.size()) - 1;
  in.logit_rows = {last};
  in.zero_embedding_at_position_0 = options_.zero_embedding_at_position_0;
  EagleHead::Output out = head_.forward(pairs.cache(), in);
  ++p.drafter_forwards;
  pairs.caught_up(ctx);
  out.hidden = fed_back(head_, out.hidden.row(last));  // (1, H): the feature paired with the first drafts
  return out;
}

Proposal EagleProposer::propose_chain(const DraftContext& ctx) {
  const int K = step_depth(ctx, options_.k);
  Proposal p;
  EagleHead::Output out = root_forward(ctx, p);  // out.hidden: (1, H), the feature of the next pair

  std::vector<int32_t> chain;
  std::vector<uint8_t> caught_up(modules_.size(), 0);  // modules that caught up this step
  caught_up[0] = 1;                                     // module 0 did in the root forward
  for (int i = 0; i < K; ++i) {
    // Draft i + 1 sits at absolute position committed + 1 + i, the key of its random draws.
    const uint32_t position = static_cast<uint32_t>(ctx.committed + 1 + i);
    const double top = ctx.stop ? top_probability(out.logits.data(), head_.config().draft_vocab) : 0.0;
    if (ctx.stop && !ctx.stop->draft_at(i + 1, top)) break;
    DraftChoice c = choose_head_token(head_, out.logits.data(), ctx.sampling, ctx.sequence_id, position);
    chain.push_back(c.token);
    if (!c.q.empty()) p.draft_probs.push_back(std::move(c.q));
    if (ctx.stop) {
      p.confidences.push_back(head_confidence(head_, out.logits.data(), c.token));
      if (!ctx.stop->draft_after(i + 1, p.confidences.back(), top)) break;
    }
    if (i + 1 == K) break;  // nothing is drafted after the last token
    // The forward that drafts depth i + 2 runs module (i + 1) mod n; a module other than the first
    // catches up on the committed pairs in the same forward the first time it runs in a step.
    const std::size_t m = static_cast<std::size_t>(i + 1) % modules_.size();
    const EagleHead& module = *modules_[m];
    EaglePairCache& pairs = pairs_[m];
    EagleHead::Input step;
    const bool catch_up = !caught_up[m];
    if (catch_up) {
      step = pairs.catch_up(ctx, draft_slots_);
      step.zero_embedding_at_position_0 = options_.zero_embedding_at_position_0;
    }
    step.tokens.push_back(c.token);
    step.features.conservativeResize(step.features.rows() + 1, out.hidden.cols());
    step.features.bottomRows(1) = out.hidden;
    if (!head_.config().reads_final_hidden()) step.projected = {1};
    step.positions.push_back(ctx.committed + i);  // drafter position of the pair (feature, draft i + 1)
    step.logit_rows = {static_cast<int>(step.tokens.size()) - 1};
    out = module.forward(pairs.cache(), step);
    if (catch_up) pairs.caught_up(ctx), caught_up[m] = 1;
    ++p.drafter_forwards;
    out.hidden = fed_back(module, out.hidden.bottomRows(1));
  }
  if (!p.draft_probs.empty()) p.draft_probs.emplace_back();  // after the last node: no children
  p.tree = DraftTree::chain(std::move(chain));
  return p;
}

Proposal EagleProposer::propose_static_tree(const DraftContext& ctx) {
  // The policy's depth budget keeps the shallower levels (a prefix of the depth-sorted shape).
  const TreeShape s = ctx.max_depth > 0 && ctx.max_depth < shape_.max_depth() ? shape_.truncated(ctx.max_depth) : shape_;
  const int N = s.size();
  const int Vd = head_.config().draft_vocab;
  const int H = head_.config().hidden();
  Proposal p;
  const EagleHead::Output root = root_forward(ctx, p);
  const int committed = ctx.committed;

  // Per node: its logits and output (when it has children) and its drafter cache slot.
  Matrix node_logits(N, Vd), node_hidden(N, H);  // (N, Vd), (N, H)
  std::vector<int> slot(static_cast<size_t>(N), -1);
  std::vector<int32_t> tokens(static_cast<size_t>(N));
  auto parent_logits = [&](int parent) { return parent < 0 ? root.logits.row(0).data() : node_logits.row(parent).data(); };
  auto parent_hidden = [&](int parent) { return parent < 0 ? root.hidden.data() : node_hidden.row(parent).data(); };

  for (int depth = 1; depth <= s.max_depth(); ++depth) {
    // Tokens of this level: the rank-r candidate of the parent's distribution.
    std::vector<std::vector<int32_t>> ranked(static_cast<size_t>(N) + 1);  // index parent + 1
    LevelRows level;
    level.position = committed - 1 + depth;
    std::vector<int> level_nodes;
    for (int n = 0; n < N; ++n) {
      if (s.depths[n] != depth) continue;
      std::vector<int32_t>& cand = ranked[static_cast<size_t>(s.parents[n] + 1)];
      if (cand.empty()) {
        int need = 0;
        for (int m = 0; m < N; ++m)
          if (s.parents[m] == s.parents[n]) need = std::max(need, s.ranks[m] + 1);
        cand = ranked_candidates(parent_logits(s.parents[n]), Vd, need);
      }
      tokens[n] = head_.to_target(cand[static_cast<size_t>(s.ranks[n])]);
      if (!s.has_children(n)) continue;
      level_nodes.push_back(n);
      level.tokens.push_back(tokens[n]);
      level.features.push_back(parent_hidden(s.parents[n]));
      std::vector<int> visible;
      for (int a = s.parents[n]; a >= 0; a = s.parents[a]) visible.push_back(slot[a]);
      level.visible_slots.push_back(std::move(visible));
    }
    if (level_nodes.empty()) continue;
    const int first_slot = pairs_.front().cache().length();
    const EagleHead::Output out = run_level(head_, pairs_.front().cache(), committed, level);
    ++p.drafter_forwards;
    const Matrix fed = fed_back(head_, out.hidden);  // (rows, H) the features of the nodes' children
    for (size_t r = 0; r < level_nodes.size(); ++r) {
      const int n = level_nodes[r];
      slot[n] = first_slot + static_cast<int>(r);
      node_logits.row(n) = out.logits.row(static_cast<Eigen::Index>(r));
      node_hidden.row(n) = fed.row(static_cast<Eigen::Index>(r));
    }
  }
  p.tree.tokens = tokens;
  p.tree.parents = s.parents;
  return p;
}

Proposal EagleProposer::propose_dynamic_tree(const DraftContext& ctx) {
  const int Vd = head_.config().draft_vocab;
  const int H = head_.config().hidden();
  const int k = options_.top_k;
  Proposal p;
  const EagleHead::Output root = root_forward(ctx, p);
  const int committed = ctx.committed;

  // Every recorded candidate, in EAGLE's order: the root's top_k, then per expansion the top_k
  // children of each frontier node (frontier-major). Parents are recorded before children.
  struct Node {
    int32_t token;  // target id
    int parent;     // −1 = root
    double score;   // cumulative log-probability
    int depth;
    int slot = -1;  // drafter cache slot once expanded
    int hidden_row = -1;
  };
  std::vector<Node> nodes;
  Matrix hidden(options_.depth * k, H);  // (depth·k, H) outputs of expanded nodes
  const std::vector<double> lp0 = log_softmax(root.logits.row(0).data(), Vd);
  std::vector<int> frontier;
  for (int32_t d : ranked_candidates(root.logits.row(0).data(), Vd, k)) {
    frontier.push_back(static_cast<int>(nodes.size()));
    nodes.push_back({head_.to_target(d), -1, lp0[static_cast<size_t>(d)], 1});
  }
  // Best first; ties to the earlier recorded node, so a parent always precedes its children.
  auto better = [&](int a, int b) { return nodes[a].score != nodes[b].score ? nodes[a].score > nodes[b].score : a < b; };

  // A depth budget m keeps m − 1 expansions (the root pass drafts depth 1).
  const int expansions = ctx.max_depth > 0 ? std::min(options_.depth, ctx.max_depth - 1) : options_.depth;
  for (int it = 0; it < expansions; ++it) {
    LevelRows level;
    level.position = committed - 1 + nodes[frontier[0]].depth;
    for (int f : frontier) {
      level.tokens.push_back(nodes[f].token);
      const int parent = nodes[f].parent;
      level.features.push_back(parent < 0 ? root.hidden.data() : hidden.row(nodes[parent].hidden_row).data());
      std::vector<int> visible;
      for (int a = parent; a >= 0; a = nodes[a].parent) visible.push_back(nodes[a].slot);
      level.visible_slots.push_back(std::move(visible));
    }
    const int first_slot = pairs_.front().cache().length();
    const EagleHead::Output out = run_level(head_, pairs_.front().cache(), committed, level);
    ++p.drafter_forwards;
    const Matrix fed = fed_back(head_, out.hidden);  // (frontier, H) the features of the children
    std::vector<int> children;
    for (size_t r = 0; r < frontier.size(); ++r) {
      Node& f = nodes[frontier[r]];
      f.slot = first_slot + static_cast<int>(r);
      f.hidden_row = it * k + static_cast<int>(r);
      hidden.row(f.hidden_row) = fed.row(static_cast<Eigen::Index>(r));
      const float* row = out.logits.row(static_cast<Eigen::Index>(r)).data();
      const std::vector<double> lp = log_softmax(row, Vd);
      const double base = f.score;
      const int depth = f.depth + 1;
      const int parent = frontier[r];
      for (int32_t d : ranked_candidates(row, Vd, k)) {
        children.push_back(static_cast<int>(nodes.size()));
        nodes.push_back({head_.to_target(d), parent, base + lp[static_cast<size_t>(d)], depth});
      }
    }
    std::partial_sort(children.begin(), children.begin() + k, children.end(), better);
    children.resize(static_cast<size_t>(k));
    frontier = std::move(children);
  }

  // Rerank: keep the best total_tokens − 1 nodes and lay them out in recorded order.
  std::vector<int> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  const size_t keep = std::min(order.size(), static_cast<size_t>(max_nodes_));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(), better);
  order.resize(keep);
  std::sort(order.begin(), order.end());
  std::vector<int> index(nodes.size(), -1);
  for (size_t i = 0; i < order.size(); ++i) index[static_cast<size_t>(order[i])] = static_cast<int>(i);
  for (int n : order) {
    const int parent = nodes[n].parent;
    if (parent >= 0 && index[static_cast<size_t>(parent)] < 0) {
      throw Error(name() + ": internal error: a kept node's parent was dropped by the rerank");
    }
    p.tree.tokens.push_back(nodes[n].token);
    p.tree.parents.push_back(parent < 0 ? -1 : index[static_cast<size_t>(parent)]);
  }
  return p;
}

}  // namespace specdec
