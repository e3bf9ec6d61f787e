// EAGLE (EAGLE-1 / EAGLE-3 heads: chain, static tree, EAGLE-2 dynamic tree) and P-EAGLE (chain,
// Medusa-style tree) drafting in the reference: greedy and coupled exactness against sequential
// decoding, target and drafter cache exactness, consistency between the shapes, the trained-depth
// guard, user tree files, and the sampling loop's distribution.
//
// The heads and methods come from eagle_fixtures.hpp, among them a passthrough head that agrees
// often with a "bigram-like" target so that the acceptance paths are exercised: the observed
// acceptance lengths are printed, and asserted to be well above 1 for that head.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <memory>

#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "reference/drafting/eagle_proposer.hpp"
#include "reference/drafting/head_candidates.hpp"
#include "reference/drafting/peagle_proposer.hpp"
#include "reference/drafting/tree_choices.hpp"
#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/sampler.hpp"
#include "tests/reference/error_capture.hpp"
#include "eagle_fixtures.hpp"
#include "model_fixtures.hpp"
#include "speculative_fixtures.hpp"
#include "scratch_dir.hpp"

namespace specdec {
namespace {

using testing::bigram_like;
using testing::chain_options;
using testing::dynamic_options;
using testing::eagle1_config;
using testing::eagle3_config;
using testing::EagleMethod;
using testing::EagleTarget;
using testing::error_of;
using testing::HeadPool;
using testing::kSmallTree;
using testing::peagle_chain;
using testing::peagle_config;
using testing::peagle_tree;
using testing::static_options;

const auto& kPrompts = testing::kExactnessPrompts;
constexpr uint64_t kModelSeed = testing::kExactnessModelSeed;
constexpr int kNewTokens = testing::kExactnessNewTokens;
constexpr int kCapacity = testing::kExactnessCapacity;

// --- exactness against sequential decoding -----------------------------------------------------

struct AcceptanceLog {
  std::map<std::string, std::pair<double, int>> by_method;  // sum of acceptance lengths, runs
  void add(const std::string& m, double al) {
    by_method[m].first += al;
    by_method[m].second += 1;
  }
  double mean(const std::string& m) const {
    const auto& [s, n] = by_method.at(m);
    return s / n;
  }
  void print(const std::string& mode) const {
    std::cout << "[ acceptance ] " << mode << " (mean tokens per step, bonus counted):\n";
    for (const auto& [m, v] : by_method) std::cout << "    " << m << ": " << v.first / v.second << "\n";
  }
};

void expect_matches_sequential(const SamplingParams& sampling, const std::string& mode, AcceptanceLog& log) {
  for (const auto& [cfg_name, cfg] : testing::speculative_targets()) {
    const Transformer plain = testing::make_model(cfg, kModelSeed);
    const Transformer bigram = bigram_like(cfg, kModelSeed);
    std::map<std::pair<int, size_t>, std::vector<int32_t>> expected;  // (target kind, prompt)
    for (int tk = 0; tk < 2; ++tk) {
      for (size_t pi = 0; pi < kPrompts.size(); ++pi) {
        expected[{tk, pi}] = decode_sequential(tk == 0 ? plain : bigram, kPrompts[pi], sampling, testing::max_new_tokens(kNewTokens)).tokens;
      }
    }
    HeadPool pool;
    for (const EagleMethod& m : testing::eagle_methods(pool)) {
      const Transformer& target = m.target == EagleTarget::plain ? plain : bigram;
      const int tk = m.target == EagleTarget::plain ? 0 : 1;
      for (int k = 1; k <= (m.uses_k ? 8 : 1); ++k) {
        for (size_t pi = 0; pi < kPrompts.size(); ++pi) {
          const std::string where = mode + ": method " + m.name + ", target " + cfg_name + ", K " + std::to_string(k) +
                                    ", prompt #" + std::to_string(pi) + ", seed " + std::to_string(sampling.seed);
          auto proposer = m.make(target, k);
          const auto acceptor = default_acceptor(sampling);
          auto cache = target.new_cache(kCapacity);
          const GenerationResult r =
              decode_speculative(target, *cache, *proposer, *acceptor, kPrompts[pi], sampling, testing::max_new_tokens(kNewTokens));
          ASSERT_EQ(r.tokens, (expected[{tk, pi}])) << where;
          if (!m.uses_k || k == 8) log.add(m.name + (m.uses_k ? " K=8" : "") + " / " + cfg_name, r.stats.acceptance_length());
          // Target cache exactness: what one plain forward over the same tokens builds.
          std::vector<int32_t> seq = kPrompts[pi];
          seq.insert(seq.end(), r.tokens.begin(), r.tokens.end() - 1);
          auto plain_cache = target.new_cache(kCapacity);
          target.forward(*plain_cache, ForwardRequest::chain(seq));
          EXPECT_TRUE(testing::dense_cache(*cache).equals(testing::dense_cache(*plain_cache))) << "target cache differs; " << where;
          // Drafter cache exactness: exactly the committed pairs, bitwise what a fresh head builds.
          const EaglePairCache& pc = testing::pair_cache_of(*proposer);
          const std::vector<int32_t>& covered = pc.covered_tokens();
          seq.push_back(r.tokens.back());
          ASSERT_GE(covered.size(), kPrompts[pi].size() + 1) << where;
          ASSERT_LE(covered.size(), seq.size()) << where;
          EXPECT_TRUE(std::equal(covered.begin(), covered.end(), seq.begin())) << "covered tokens are not a prefix; " << where;
          EXPECT_EQ(pc.cache().length(), pc.pairs()) << where;
          auto fresh = testing::fresh_pair_cache(target, testing::head_of(*proposer), covered, kCapacity, testing::zero_first_of(*proposer));
          EXPECT_TRUE(testing::dense_cache(pc.cache()).equals(testing::dense_cache(*fresh))) << "drafter cache differs from a fresh run; " << where;
        }
      }
    }
  }
}

TEST(EagleMethods, GreedyEqualsSequentialForEveryShape) {
  AcceptanceLog log;
  expect_matches_sequential(SamplingParams{}, "greedy", log);
  log.print("greedy");
  // The passthrough head agrees with the bigram-like target most of the time.
  for (const auto& [cfg_name, cfg] : testing::speculative_targets()) {
    EXPECT_GT(log.mean("passthrough_chain K=8 / " + cfg_name), 2.0) << cfg_name;
    EXPECT_GT(log.mean("passthrough_tree_mc_sim_7b_63 / " + cfg_name), 2.0) << cfg_name;
    EXPECT_GT(log.mean("passthrough_dynamic_7_10_60 / " + cfg_name), 2.0) << cfg_name;
  }
}

TEST(EagleMethods, CoupledSamplingEqualsSequential) {
  for (double t : {0.7, 1.0}) {
    SamplingParams s;
    s.mode = SamplingParams::Mode::coupled;
    s.temperature = t;
    s.seed = 31337;
    AcceptanceLog log;
    expect_matches_sequential(s, "coupled T=" + std::to_string(t), log);
    log.print("coupled T=" + std::to_string(t));
  }
}

// --- consistency between shapes -----------------------------------------------------------------

// A context over `prompt` + the sequential continuation, with the target's states.
struct Context {
  std::vector<int32_t> sequence;
  ForwardResult states;
  DraftContext ctx;
};

std::unique_ptr<Context> make_context(const Transformer& target, const EagleHead& head, std::vector<int32_t> prompt, int extra) {
  auto c = std::make_unique<Context>();
  c->sequence = std::move(prompt);
  const auto more = decode_sequential(target, c->sequence, SamplingParams{}, testing::max_new_tokens(extra)).tokens;
  c->sequence.insert(c->sequence.end(), more.begin(), more.end());
  auto tc = target.new_cache(kCapacity);
  ForwardRequest r;
  r.tokens.assign(c->sequence.begin(), c->sequence.end() - 1);
  r.final_hidden = true;
  r.aux_layers = head.config().aux_layers;
  c->states = target.forward(*tc, r);
  c->ctx.sequence = &c->sequence;
  c->ctx.committed = static_cast<int>(c->sequence.size()) - 1;
  c->ctx.final_hidden = &c->states.final_hidden;
  c->ctx.aux_hidden = &c->states.aux_hidden;
  return c;
}

TEST(EagleMethods, ShapesAgreeWhereTheyCoincide) {
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  HeadPool pool;
  const EagleHead& h1 = pool.add(random_eagle_head(eagle1_config(cfg), target, 21, 0.08f));
  const EagleHead& h3 = pool.add(random_eagle_head(eagle3_config(cfg, 64), target, 22, 0.08f));
  const EagleHead& hp = pool.add(random_eagle_head(peagle_config(cfg, 80, 8), target, 23, 0.08f));
  for (const EagleHead* h : {&h1, &h3}) {
    for (int k = 1; k <= 6; ++k) {
      auto c = make_context(target, *h, kPrompts[0], 3);
      const std::string where = eagle_kind_name(h->config().kind) + " K " + std::to_string(k);
      EagleProposer chain(*h, chain_options(k), 64);
      const Proposal pc = chain.propose(c->ctx);
      EXPECT_EQ(pc.drafter_forwards, k) << where;
      // A static tree that is a chain of rank-0 children is the greedy chain.
      TreeChoices line;
      for (int d = 1; d <= k; ++d) line.push_back(std::vector<int>(static_cast<size_t>(d), 0));
      EagleProposer tree(*h, static_options(line), 64);
      const Proposal pt = tree.propose(c->ctx);
      EXPECT_EQ(pt.tree.tokens, pc.tree.tokens) << where;
      EXPECT_EQ(pt.tree.parents, pc.tree.parents) << where;
      // So is a dynamic tree with top_k = 1.
      EagleProposer dyn(*h, dynamic_options(std::max(1, k - 1), 1, k + 1), 64);
      const Proposal pd = dyn.propose(c->ctx);
      EXPECT_EQ(pd.tree.tokens, pc.tree.tokens) << where;
      // Proposing twice from the same context gives the same draft (the cache rolled back).
      EXPECT_EQ(chain.propose(c->ctx).tree.tokens, pc.tree.tokens) << where;
      EXPECT_EQ(chain.pair_cache().pairs(), c->ctx.committed) << where;
      EXPECT_EQ(chain.pair_cache().cache().length(), c->ctx.committed) << where;
    }
  }
  for (int k = 1; k <= 8; ++k) {
    auto c = make_context(target, hp, kPrompts[2], 2);
    PEagleProposer chain(hp, peagle_chain(k), 64);
    const Proposal pc = chain.propose(c->ctx);
    EXPECT_EQ(pc.drafter_forwards, 1);
    TreeChoices line;
    for (int d = 1; d <= k; ++d) line.push_back(std::vector<int>(static_cast<size_t>(d), 0));
    PEagleProposer tree(hp, peagle_tree(line), 64);
    EXPECT_EQ(tree.propose(c->ctx).tree.tokens, pc.tree.tokens) << "peagle K " << k;
    EXPECT_EQ(chain.pair_cache().cache().length(), c->ctx.committed) << "peagle K " << k;
  }
}

// The drafts are what an independent, cache-free evaluation of the head gives, chosen under each
// sampling mode at the draft's own position (draft j of a step at absolute position committed + j)
// over the target vocabulary (the draft logits placed at their target ids).
struct NaiveChoice {
  int32_t token;
  std::vector<double> q;  // sample mode
};

NaiveChoice naive_choice(const EagleHead& h, const float* draft_logits, const SamplingParams& s, uint32_t position) {
  const int V = h.config().target_vocab;
  std::vector<float> full(static_cast<size_t>(V), -std::numeric_limits<float>::infinity());
  for (int d = 0; d < h.config().draft_vocab; ++d) full[static_cast<size_t>(h.to_target(d))] = draft_logits[d];
  switch (s.mode) {
    case SamplingParams::Mode::greedy: return {h.to_target(argmax(draft_logits, h.config().draft_vocab)), {}};
    case SamplingParams::Mode::coupled: return {sample_token(full.data(), V, s, 0, position), {}};
    case SamplingParams::Mode::sample: {
      std::vector<double> q = probabilities(full.data(), V, s);
      const int t = sample_from(q, uniform(s.seed, 0, position, RandomPurpose::draft, 0));
      return {t, q};
    }
  }
  return {};
}

void expect_same_proposal(const Proposal& p, const std::vector<NaiveChoice>& expect, const EagleHead& h, const std::string& where) {
  ASSERT_EQ(p.tree.size(), static_cast<int>(expect.size())) << where;
  EXPECT_TRUE(p.tree.is_chain()) << where;
  for (size_t j = 0; j < expect.size(); ++j) EXPECT_EQ(p.tree.tokens[j], expect[j].token) << where << ", draft " << j + 1;
  if (expect[0].q.empty()) {
    EXPECT_TRUE(p.draft_probs.empty()) << where;
    return;
  }
  ASSERT_EQ(p.draft_probs.size(), expect.size() + 1) << where;
  EXPECT_TRUE(p.draft_probs.back().empty()) << where;
  for (size_t j = 0; j < expect.size(); ++j) {
    EXPECT_EQ(p.draft_probs[j], expect[j].q) << where << ", q of draft " << j + 1;
    double sum = 0;
    for (int t = 0; t < h.config().target_vocab; ++t) {
      sum += p.draft_probs[j][static_cast<size_t>(t)];
      if (!h.in_draft_vocab(t)) {
        EXPECT_EQ(p.draft_probs[j][static_cast<size_t>(t)], 0.0) << where << ", token " << t;
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-12) << where;
    EXPECT_GT(p.draft_probs[j][static_cast<size_t>(p.tree.tokens[j])], 0.0) << where;
  }
}

TEST(EagleMethods, DraftsMatchAFreshHeadEvaluation) {
  const auto cfg = testing::speculative_targets()[1].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  HeadPool pool;
  const EagleHead& h3 = pool.add(random_eagle_head(eagle3_config(cfg, 64), target, 31, 0.08f));
  const EagleHead& hp = pool.add(random_eagle_head(peagle_config(cfg, 80, 8), target, 32, 0.08f));
  const int k = 5;
  auto c = make_context(target, h3, kPrompts[2], 4);
  const int n = c->ctx.committed;
  SamplingParams coupled, sample;
  coupled.mode = SamplingParams::Mode::coupled;
  coupled.seed = 5;
  sample.mode = SamplingParams::Mode::sample;
  sample.temperature = 0.9;
  sample.seed = 6;
  for (const SamplingParams& s : {SamplingParams{}, coupled, sample}) {
    const std::string mode = to_string(s.mode);
    c->ctx.sampling = s;
    // EAGLE-3 chain: from scratch for every draft, each draft's row carrying the previous row's
    // output as a projected feature.
    EagleProposer chain(h3, chain_options(k), 64);
    const Proposal drafts = chain.propose(c->ctx);
    {
      EagleHead::Input in;
      in.tokens.assign(c->sequence.begin() + 1, c->sequence.end());
      in.features = c->states.aux_hidden.topRows(n);
      in.projected.assign(static_cast<size_t>(n), 0);
      std::vector<NaiveChoice> expect;
      for (int i = 0; i < k; ++i) {
        auto cache = h3.new_cache(kCapacity);
        EagleHead::Input all = in;
        all.logit_rows = {static_cast<int>(all.tokens.size()) - 1};
        const EagleHead::Output out = h3.forward(*cache, all);
        expect.push_back(naive_choice(h3, out.logits.data(), s, static_cast<uint32_t>(n + 1 + i)));
        in.tokens.push_back(expect.back().token);
        Matrix f = Matrix::Zero(in.features.rows() + 1, in.features.cols());
        f.topRows(in.features.rows()) = in.features;
        f.row(in.features.rows()).head(h3.config().hidden()) = out.hidden.bottomRows(1);
        in.features = f;
        in.projected.push_back(1);
      }
      expect_same_proposal(drafts, expect, h3, "eagle3 chain, " + mode);
    }
    // P-EAGLE: one causal forward over all pairs and the mask slots.
    PEagleProposer pe(hp, peagle_chain(k), 64);
    const Proposal pdrafts = pe.propose(c->ctx);
    {
      EagleHead::Input in;
      in.tokens.assign(c->sequence.begin() + 1, c->sequence.end());
      in.features.resize(n + k - 1, hp.config().feature_width());
      in.features.topRows(n) = c->states.aux_hidden.topRows(n);
      for (int j = 1; j < k; ++j) {
        in.tokens.push_back(hp.config().mask_token_id);
        in.features.row(n - 1 + j) = hp.mask_hidden().transpose();
      }
      for (int j = 0; j < k; ++j) in.logit_rows.push_back(n - 1 + j);
      auto cache = hp.new_cache(kCapacity);
      const EagleHead::Output out = hp.forward(*cache, in);
      std::vector<NaiveChoice> expect;
      for (int j = 0; j < k; ++j) expect.push_back(naive_choice(hp, out.logits.row(j).data(), s, static_cast<uint32_t>(n + 1 + j)));
      expect_same_proposal(pdrafts, expect, hp, "peagle chain, " + mode);
    }
  }
}

// The head evaluated from scratch (fresh cache, one causal forward) over the committed pairs of
// `c` followed by `path` (draft tokens, each row carrying the previous row's output as feature):
// the draft-vocabulary logits at the last row.
std::vector<float> naive_path_logits(const EagleHead& h, const Context& c, const std::vector<int32_t>& path) {
  const bool eagle1 = h.config().kind == EagleKind::eagle1;
  const int n = c.ctx.committed;
  const int H = h.config().hidden();
  EagleHead::Input in;
  in.tokens.assign(c.sequence.begin() + 1, c.sequence.end());
  in.features = eagle1 ? Matrix(c.states.final_hidden.topRows(n)) : Matrix(c.states.aux_hidden.topRows(n));
  if (!eagle1) in.projected.assign(static_cast<size_t>(n), 0);
  EagleHead::Output out;
  for (size_t j = 0; j <= path.size(); ++j) {
    auto cache = h.new_cache(kCapacity);
    EagleHead::Input all = in;
    all.logit_rows = {static_cast<int>(all.tokens.size()) - 1};
    out = h.forward(*cache, all);
    if (j == path.size()) break;
    in.tokens.push_back(path[j]);
    Matrix f = Matrix::Zero(in.features.rows() + 1, in.features.cols());
    f.topRows(in.features.rows()) = in.features;
    f.row(in.features.rows()).head(H) = out.hidden.bottomRows(1);
    in.features = f;
    if (!eagle1) in.projected.push_back(1);
  }
  return std::vector<float>(out.logits.data(), out.logits.data() + out.logits.cols());
}

std::vector<int32_t> path_tokens(const DraftTree& t, int node) {
  std::vector<int32_t> out;
  for (int n : t.path_to(node)) out.push_back(t.tokens[n]);
  return out;
}

// Static trees: node n is the rank-r candidate of the head evaluated over its parent's path.
// Dynamic trees: an independent EAGLE-2 over the same fresh evaluations gives the same tree.
TEST(EagleMethods, TreesMatchAFreshHeadEvaluation) {
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  HeadPool pool;
  const EagleHead& h1 = pool.add(random_eagle_head(eagle1_config(cfg), target, 81, 0.08f));
  const EagleHead& h3 = pool.add(random_eagle_head(eagle3_config(cfg, 64), target, 82, 0.08f));
  for (const EagleHead* h : {&h1, &h3}) {
    const std::string kind = eagle_kind_name(h->config().kind);
    auto c = make_context(target, *h, kPrompts[0], 3);
    const int Vd = h->config().draft_vocab;
    for (const TreeChoices& choices : {mc_sim_7b_63(), kSmallTree}) {
      EagleProposer p(*h, static_options(choices), 64);
      const DraftTree t = p.propose(c->ctx).tree;
      const TreeShape s = make_tree_shape(choices, "t");
      for (int n = 0; n < t.size(); ++n) {
        const std::vector<float> l = naive_path_logits(*h, *c, path_tokens(t, s.parents[n]));
        const int32_t d = ranked_candidates(l.data(), Vd, s.ranks[n] + 1).back();
        EXPECT_EQ(t.tokens[n], h->to_target(d)) << kind << " static tree, node " << n;
      }
    }
    for (const auto& [depth, top_k, total] : std::vector<std::array<int, 3>>{{3, 3, 12}, {2, 4, 30}}) {
      EagleProposer p(*h, dynamic_options(depth, top_k, total), 64);
      const DraftTree t = p.propose(c->ctx).tree;
      // Independent EAGLE-2: nodes as (path of draft ids, score), level by level.
      struct N {
        std::vector<int32_t> path;  // target ids
        double score;
      };
      std::vector<N> all, frontier;
      auto children_of = [&](const N& parent) {
        const std::vector<float> l = naive_path_logits(*h, *c, parent.path);
        const std::vector<double> lp = log_softmax(l.data(), Vd);
        std::vector<N> out;
        for (int32_t d : ranked_candidates(l.data(), Vd, top_k)) {
          N child = parent;
          child.path.push_back(h->to_target(d));
          child.score = parent.score + lp[static_cast<size_t>(d)];
          out.push_back(child);
        }
        return out;
      };
      frontier = children_of(N{{}, 0.0});
      all = frontier;
      for (int it = 0; it < depth; ++it) {
        std::vector<N> kids;
        for (const N& f : frontier)
          for (const N& ch : children_of(f)) kids.push_back(ch);
        all.insert(all.end(), kids.begin(), kids.end());
        std::stable_sort(kids.begin(), kids.end(), [](const N& a, const N& b) { return a.score > b.score; });
        kids.resize(static_cast<size_t>(top_k));
        frontier = kids;
      }
      std::vector<size_t> idx(all.size());
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return all[a].score > all[b].score; });
      idx.resize(std::min(idx.size(), static_cast<size_t>(total - 1)));
      std::sort(idx.begin(), idx.end());
      std::vector<std::vector<int32_t>> expected_paths, got_paths;
      for (size_t i : idx) expected_paths.push_back(all[i].path);
      for (int n = 0; n < t.size(); ++n) got_paths.push_back(path_tokens(t, n));
      EXPECT_EQ(got_paths, expected_paths) << kind << " dynamic tree depth " << depth << " top_k " << top_k;
    }
  }
}

TEST(EagleMethods, TreeSizesAndShapes) {
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  HeadPool pool;
  const EagleHead& h1 = pool.add(random_eagle_head(eagle1_config(cfg), target, 41, 0.08f));
  auto c = make_context(target, h1, kPrompts[0], 2);
  EagleProposer mc(h1, static_options(mc_sim_7b_63()), 64);
  EXPECT_EQ(mc.max_nodes(), 25);
  const Proposal p = mc.propose(c->ctx);
  EXPECT_EQ(p.tree.size(), 25);
  EXPECT_TRUE(p.draft_probs.empty());
  // One forward for the root and one per level that has children (depths 1..4).
  EXPECT_EQ(p.drafter_forwards, 5);
  p.tree.validate(cfg.vocab_size);
  for (const EagleOptions& o : {dynamic_options(7, 10, 60), dynamic_options(2, 3, 100), dynamic_options(3, 4, 9)}) {
    EagleProposer dyn(h1, o, 64);
    const Proposal d = dyn.propose(c->ctx);
    const int recorded = o.top_k + o.depth * o.top_k * o.top_k;
    EXPECT_EQ(d.tree.size(), std::min(o.total_tokens - 1, recorded));
    EXPECT_EQ(dyn.max_nodes(), d.tree.size());
    EXPECT_EQ(d.drafter_forwards, 1 + o.depth);
    d.tree.validate(cfg.vocab_size);
    int max_depth = 0;
    for (int n = 0; n < d.tree.size(); ++n) max_depth = std::max(max_depth, d.tree.depth(n));
    EXPECT_LE(max_depth, o.depth + 1);
    // Siblings are distinct tokens.
    for (int n = -1; n < d.tree.size(); ++n) {
      std::vector<int32_t> toks;
      for (int ch : d.tree.children(n)) toks.push_back(d.tree.tokens[ch]);
      std::sort(toks.begin(), toks.end());
      EXPECT_EQ(std::adjacent_find(toks.begin(), toks.end()), toks.end()) << "node " << n;
    }
  }
  // The root's children of a dynamic tree are the head's top_k at the pending token, best first.
  EagleProposer chain(h1, chain_options(1), 64);
  EagleProposer dyn(h1, dynamic_options(1, 4, 5), 64);
  const Proposal d = dyn.propose(c->ctx);
  ASSERT_EQ(d.tree.size(), 4);
  EXPECT_EQ(d.tree.parents, (std::vector<int32_t>{-1, -1, -1, -1}));
  EXPECT_EQ(d.tree.tokens[0], chain.propose(c->ctx).tree.tokens[0]);
}

// --- P-EAGLE trained depth ---------------------------------------------------------------------

TEST(EagleMethods, PEagleRefusesDepthBeyondTrainingUnlessForced) {
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  const EagleHead head = random_eagle_head(peagle_config(cfg, 80, 4), target, 51, 0.08f);
  const std::string e = error_of([&] { PEagleProposer(head, peagle_chain(5), 64); });
  EXPECT_CONTAINS(e, "trained for at most 4");
  EXPECT_CONTAINS(e, "5 parallel positions");
  EXPECT_CONTAINS(error_of([&] { PEagleProposer(head, peagle_tree(mc_sim_7b_63()), 64); }), "trained for at most 4");
  EXPECT_NO_THROW(PEagleProposer(head, peagle_chain(4), 64));
  PEagleOptions forced = peagle_chain(10);
  forced.force = true;
  PEagleProposer p(head, forced, 64);
  EXPECT_EQ(p.max_nodes(), 10);
  const GenerationResult r = decode_speculative(target, p, MatchAcceptor{}, kPrompts[0], SamplingParams{}, testing::max_new_tokens(kNewTokens));
  EXPECT_EQ(r.tokens, decode_sequential(target, kPrompts[0], SamplingParams{}, testing::max_new_tokens(kNewTokens)).tokens);
  // trained_depth 0 (unknown): nothing to refuse.
  const EagleHead unknown = random_eagle_head(peagle_config(cfg, 80, 0), target, 52, 0.08f);
  EXPECT_NO_THROW(PEagleProposer(unknown, peagle_chain(12), 64));
}

// --- bad options and contexts --------------------------------------------------------------------

TEST(EagleMethods, RejectsBadOptions) {
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  HeadPool pool;
  const EagleHead& h1 = pool.add(random_eagle_head(eagle1_config(cfg), target, 61, 0.08f));
  const EagleHead& h3 = pool.add(random_eagle_head(eagle3_config(cfg, 8), target, 62, 0.08f));
  const EagleHead& hp = pool.add(random_eagle_head(peagle_config(cfg, 80, 8), target, 63, 0.08f));
  EXPECT_CONTAINS(error_of([&] { EagleProposer(h1, chain_options(0), 64); }), "K must be >= 1");
  EXPECT_CONTAINS(error_of([&] { PEagleProposer(hp, peagle_chain(0), 64); }), "K must be >= 1");
  EXPECT_CONTAINS(error_of([&] { EagleProposer(h3, static_options({{0}, {8}}), 64); }), "rank 8");
  EXPECT_CONTAINS(error_of([&] { EagleProposer(h3, dynamic_options(3, 9, 20), 64); }), "top_k must be in [1, 8]");
  EXPECT_CONTAINS(error_of([&] { EagleProposer(h1, dynamic_options(0, 4, 20), 64); }), "depth must be >= 1");
  EXPECT_CONTAINS(error_of([&] { EagleProposer(h1, dynamic_options(3, 4, 1), 64); }), "total_tokens must be >= 2");
  EXPECT_CONTAINS(error_of([&] { EagleProposer(hp, chain_options(3), 64); }), "P-EAGLE proposer");
  EXPECT_CONTAINS(error_of([&] { PEagleProposer(h3, peagle_chain(3), 64); }), "needs a P-EAGLE head");
  EXPECT_CONTAINS(error_of([&] { EagleProposer(h1, chain_options(3), 1); }), "capacity");
  EXPECT_CONTAINS(error_of([] { parse_eagle_shape("bush"); }), "expected chain, tree or dynamic");
  EXPECT_EQ(parse_eagle_shape("dynamic"), EagleShape::dynamic_tree);
  EXPECT_CONTAINS(error_of([] { parse_peagle_shape("dynamic"); }), "expected chain or tree");

  // Contexts without the features the head needs, or sequences beyond the capacity.
  auto c = make_context(target, h3, kPrompts[0], 2);
  EagleProposer e1(h1, chain_options(2), 64);
  DraftContext no_final = c->ctx;
  no_final.final_hidden = nullptr;
  EXPECT_CONTAINS(error_of([&] { e1.propose(no_final); }), "final hidden states");
  EagleProposer e3(h3, chain_options(2), 64);
  DraftContext narrow = c->ctx;
  const Matrix half = c->states.aux_hidden.leftCols(cfg.hidden_size);
  narrow.aux_hidden = &half;
  EXPECT_CONTAINS(error_of([&] { e3.propose(narrow); }), "aux hidden states");
  EagleProposer small(h1, chain_options(4), 3);
  EXPECT_CONTAINS(error_of([&] { small.propose(c->ctx); }), "beyond the drafter cache");
  // After a failure the proposer still works.
  EXPECT_NO_THROW(e1.propose(c->ctx));
  EXPECT_EQ(e1.pair_cache().cache().length(), c->ctx.committed);
  EXPECT_EQ(e1.wants_final_hidden(), true);
  EXPECT_TRUE(e1.wanted_aux_layers().empty());
  EXPECT_EQ(e3.wants_final_hidden(), false);
  EXPECT_EQ(e3.wanted_aux_layers(), h3.config().aux_layers);
  EXPECT_EQ(e3.name(), "eagle3-chain");
}

// --- tree choices ------------------------------------------------------------------------------

TEST(EagleMethods, TreeChoicesParseAndLayout) {
  const TreeShape mc = make_tree_shape(mc_sim_7b_63(), "mc");
  EXPECT_EQ(mc.size(), 25);
  EXPECT_EQ(mc.max_depth(), 5);
  EXPECT_EQ(mc.max_rank(), 3);
  for (int n = 0; n < mc.size(); ++n) {
    EXPECT_LT(mc.parents[n], n);
    if (mc.parents[n] >= 0) {
      EXPECT_EQ(mc.depths[mc.parents[n]] + 1, mc.depths[n]);
    }
  }
  // Unsorted input is laid out by depth, then lexicographically.
  const TreeShape s = make_tree_shape({{1, 0}, {0, 1}, {1}, {0}, {0, 0}}, "t");
  EXPECT_EQ(s.paths, (TreeChoices{{0}, {1}, {0, 0}, {0, 1}, {1, 0}}));
  EXPECT_EQ(s.parents, (std::vector<int>{-1, -1, 0, 0, 1}));
  EXPECT_EQ(s.ranks, (std::vector<int>{0, 1, 0, 1, 0}));
  EXPECT_EQ(parse_tree_choices(nlohmann::json::parse("[[0],[1],[0,0],[0,1],[1,0]]"), "j"), (TreeChoices{{0}, {1}, {0, 0}, {0, 1}, {1, 0}}));
  EXPECT_EQ(parse_tree_choices(tree_choices_to_json(mc_sim_7b_63()), "round trip"), mc_sim_7b_63());
  EXPECT_EQ(tree_choices_from_spec("mc_sim_7b_63"), mc_sim_7b_63());

  auto parse_error = [](const std::string& text) {
    return error_of([&] { parse_tree_choices(nlohmann::json::parse(text), "tree.json"); });
  };
  EXPECT_CONTAINS(parse_error("{\"a\": 1}"), "tree.json: tree choices must be a list of paths");
  EXPECT_CONTAINS(parse_error("[0, 1]"), "entry #0 is 0, not a list");
  EXPECT_CONTAINS(parse_error("[[0], \"x\"]"), "entry #1 is \"x\", not a list");
  EXPECT_CONTAINS(parse_error("[[0], [0, 1.5]]"), "holds 1.5 at depth 2");
  EXPECT_CONTAINS(parse_error("[[0], [0, -1]]"), "rank -1 at depth 2");
  EXPECT_CONTAINS(parse_error("[[0], [-2]]"), "rank -2");
  EXPECT_CONTAINS(parse_error("[[0], [1, 0]]"), "path [1, 0] has no parent path [1]");
  EXPECT_CONTAINS(parse_error("[[0], [0, 0, 0]]"), "has no parent path [0, 0]");
  EXPECT_CONTAINS(parse_error("[]"), "the tree choices are empty");
  EXPECT_CONTAINS(parse_error("[[0], []]"), "is empty");
  EXPECT_CONTAINS(parse_error("[[0], [0]]"), "path [0] is listed twice");
  EXPECT_CONTAINS(parse_error("[[0], [99999999999]]"), "rank 99999999999");

  testing::ScratchDir dir("eagle-tree");
  testing::write_text(dir / "good.json", "[[0], [1], [0, 0]]\n");
  EXPECT_EQ(tree_choices_from_spec((dir / "good.json").string()), (TreeChoices{{0}, {1}, {0, 0}}));
  testing::write_text(dir / "bad.json", "[[0], [1");
  const std::string e = error_of([&] { load_tree_choices(dir / "bad.json"); });
  EXPECT_CONTAINS(e, "bad.json: not valid JSON");
  EXPECT_CONTAINS(error_of([&] { load_tree_choices(dir / "missing.json"); }), "missing.json: cannot open");
  testing::write_text(dir / "orphan.json", "[[0], [2, 0]]");
  EXPECT_CONTAINS(error_of([&] { tree_choices_from_spec((dir / "orphan.json").string()); }), "orphan.json: path [2, 0] has no parent path [2]");
}

// --- sample mode ---------------------------------------------------------------------------------

TEST(EagleMethods, SampleModeRunsWithSaneStatistics) {
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  const Transformer bigram = bigram_like(cfg, kModelSeed);
  HeadPool pool;
  for (const EagleMethod& m : testing::eagle_methods(pool)) {
    const Transformer& t = m.target == EagleTarget::plain ? target : bigram;
    for (int k : {1, 4}) {
      if (!m.uses_k && k != 1) continue;
      for (uint64_t seed : {1u, 2u}) {
        SamplingParams s;
        s.mode = SamplingParams::Mode::sample;
        s.temperature = 0.8;
        s.top_k = 20;
        s.seed = seed;
        auto p = m.make(t, k);
        const GenerationResult r = decode_speculative(t, *p, RejectionAcceptor{}, kPrompts[0], s, testing::max_new_tokens(kNewTokens));
        const std::string where = m.name + " K " + std::to_string(k) + " seed " + std::to_string(seed);
        ASSERT_EQ(r.tokens.size(), static_cast<size_t>(kNewTokens)) << where;
        for (int32_t tok : r.tokens) EXPECT_TRUE(tok >= 0 && tok < cfg.vocab_size) << where;
        EXPECT_LE(r.stats.accepted_tokens, r.stats.drafted_tokens) << where;
        EXPECT_GE(r.stats.acceptance_length(), 1.0) << where;
        EXPECT_LE(r.stats.acceptance_length(), 1.0 + p->max_nodes()) << where;
        // The same seed gives the same output.
        auto again = m.make(t, k);
        EXPECT_EQ(decode_speculative(t, *again, RejectionAcceptor{}, kPrompts[0], s, testing::max_new_tokens(kNewTokens)).tokens, r.tokens) << where;
      }
    }
  }
}

// Goodness of fit of the sampling loop with EAGLE drafters (draft vocabulary smaller than the
// target's, so q is zero outside it), against the target's exact distribution of three tokens.
// Same statistic and reasoning as test_speculative's: Pearson chi-square, bins with expected count
// < 5 merged, N runs (seeds 1..N), alpha = 1e-3 with the Wilson–Hilferty critical value. For
// N = 3000 and an alternative at total-variation distance 0.08, the noncentrality is >= 4·N·δ² = 77.
TEST(EagleMethods, SamplingLoopMatchesTargetDistribution) {
  ModelConfig cfg = testing::tiny_llama(6);
  cfg.eos_token_ids.clear();
  const Transformer target = testing::make_model(cfg, 7);
  HeadPool pool;
  EagleHeadConfig c3 = eagle3_config(cfg, 4);
  const EagleHead& h3 = pool.add(random_eagle_head(c3, target, 71, 0.3f));
  EagleHeadConfig cp = peagle_config(cfg, 5, 8);
  cp.mask_token_id = 2;
  const EagleHead& hp = pool.add(random_eagle_head(cp, target, 72, 0.3f));
  const std::vector<int32_t> prompt = {1, 4};
  SamplingParams s;
  s.mode = SamplingParams::Mode::sample;
  s.temperature = 1.0;

  const auto expected = testing::three_token_distribution(target, prompt, s);
  struct Case {
    std::string name;
    std::function<std::unique_ptr<Proposer>()> make;
  };
  const std::vector<Case> cases = {
      {"eagle3_chain_k2", [&] { return std::make_unique<EagleProposer>(h3, chain_options(2), 8); }},
      {"eagle3_tree", [&] { return std::make_unique<EagleProposer>(h3, static_options({{0}, {1}, {0, 0}}), 8); }},
      {"peagle_chain_k2", [&] { return std::make_unique<PEagleProposer>(hp, peagle_chain(2), 8); }},
  };
  const int N = 3000;
  for (const Case& k : cases) {
    std::map<std::vector<int32_t>, int> counts;
    for (int i = 1; i <= N; ++i) {
      s.seed = static_cast<uint64_t>(i);
      auto proposer = k.make();
      counts[decode_speculative(target, *proposer, RejectionAcceptor{}, prompt, s, testing::max_new_tokens(3)).tokens]++;
    }
    const testing::ChiSquare chi = testing::chi_square_test(expected, counts, N);
    EXPECT_LT(chi.statistic, chi.critical) << k.name << ": chi-square " << chi.statistic << " with "
                                           << chi.degrees_of_freedom << " degrees of freedom, N " << N << ", seeds 1.." << N;
    EXPECT_GT(chi.bins, 10) << k.name;
  }
}

}  // namespace
}  // namespace specdec
