// TypicalAcceptor (Medusa's typical acceptance, lossy by design): the threshold
// min(epsilon, delta * exp(-H)) deciding on hand-built distributions (just above / just below, on
// both of its branches), Medusa's entropy with its log(p + 1e-5), the longest accepted path of a
// tree and the log-likelihood tie-break, the next token (the run's own sampler, not Medusa's
// truncated one), greedy refused, a whole decode that accepts nothing reproducing sequential
// decoding, and the parser's and the JSON reader's errors. Fixed seeds; every message names its
// seed and case.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/acceptance/typical_acceptor.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/sampling/sampler.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/model_fixtures.hpp"

namespace specdec {
namespace {

using testing::error_of;

// (rows, V) logits log(p) of the given distributions (each of V entries), so that
// probabilities() at temperature 1 gives p back up to float rounding.
Matrix logits_of(const std::vector<std::vector<double>>& rows) {
  const int V = static_cast<int>(rows.at(0).size());
  Matrix m(static_cast<int>(rows.size()), V);
  for (size_t r = 0; r < rows.size(); ++r)
    for (int v = 0; v < V; ++v) m(static_cast<int>(r), v) = static_cast<float>(std::log(rows[r][static_cast<size_t>(v)]));
  return m;
}

// `head` followed by `rest` split evenly over the other entries up to V.
std::vector<double> dist(std::vector<double> head, int V) {
  double used = 0;
  for (double x : head) used += x;
  const double each = (1.0 - used) / static_cast<double>(V - static_cast<int>(head.size()));
  while (static_cast<int>(head.size()) < V) head.push_back(each);
  return head;
}

// `p` with entry `token` set to `value` and the rest rescaled to keep the sum 1.
std::vector<double> with(std::vector<double> p, int token, double value) {
  const double others = 1.0 - p[static_cast<size_t>(token)];
  for (size_t v = 0; v < p.size(); ++v) p[v] = static_cast<int>(v) == token ? value : p[v] * (1.0 - value) / others;
  return p;
}

const float* row(const Matrix& m, int r) { return m.data() + static_cast<std::ptrdiff_t>(r) * m.cols(); }

SamplingParams sampling(SamplingParams::Mode mode, uint64_t seed) {
  SamplingParams sp;
  sp.mode = mode;
  sp.seed = seed;
  return sp;
}

// Medusa's entropy written out here independently: -sum p * log(p + 1e-5).
double medusa_formula(const std::vector<double>& p) {
  double h = 0;
  for (double x : p) h += x * std::log(x + 1e-5);
  return -h;
}

const SamplingParams::Mode kModes[] = {SamplingParams::Mode::sample, SamplingParams::Mode::coupled};

TEST(TypicalAcceptance, EntropyIsMedusasWithItsLogFloor) {
  const std::vector<double> half = {0.5, 0.5};
  EXPECT_DOUBLE_EQ(medusa_entropy(half), -2 * 0.5 * std::log(0.5 + 1e-5));
  // The + 1e-5 makes it slightly smaller than the true entropy log 2.
  EXPECT_LT(medusa_entropy(half), std::log(2.0));
  EXPECT_NEAR(medusa_entropy(half), std::log(2.0), 2.1e-5);
  // A masked token (p = 0) adds exactly nothing; a one-hot p has H = -log(1 + 1e-5) < 0.
  EXPECT_EQ(medusa_entropy({0.5, 0.0, 0.5}), medusa_entropy(half));
  EXPECT_DOUBLE_EQ(medusa_entropy({1.0, 0.0, 0.0}), -std::log(1.0 + 1e-5));
  EXPECT_LT(medusa_entropy({1.0, 0.0, 0.0}), 0.0);
  const std::vector<double> p = dist({0.5, 0.06}, 24);
  EXPECT_NEAR(medusa_entropy(p), medusa_formula(p), 1e-15);
  // The threshold: min(epsilon, delta * exp(-H)).
  const TypicalAcceptance defaults;
  EXPECT_EQ(defaults.epsilon, 0.09);
  EXPECT_EQ(defaults.delta, 0.3);
  EXPECT_DOUBLE_EQ(typical_threshold(p, defaults), std::min(0.09, 0.3 * std::exp(-medusa_formula(p))));
  EXPECT_EQ(typical_threshold({0.98, 0.01, 0.01}, defaults), 0.09) << "a peaked p: the epsilon floor binds";
}

// One draft below the root; its token's p(x) against thresholds placed just around it, on each
// branch of the min.
TEST(TypicalAcceptance, TheThresholdDecidesJustAboveAndJustBelow) {
  const Matrix logits = logits_of({dist({0.5, 0.25, 0.15}, 4), dist({}, 4)});
  const DraftTree tree = DraftTree::chain({2});
  for (const SamplingParams::Mode mode : kModes) {
    for (const uint64_t seed : {1u, 2u, 3u}) {
      const SamplingParams sp = sampling(mode, seed);
      const std::vector<double> p = probabilities(row(logits, 0), 4, sp);
      const double px = p[2], H = medusa_formula(p);
      struct Case {
        const char* name;
        TypicalAcceptance params;
        bool accept;
      };
      // delta = 1000: delta * exp(-H) > 1, so the threshold is epsilon; epsilon = 1: it is delta * exp(-H).
      const Case cases[] = {
          {"epsilon just below p(x)", {std::nextafter(px, 0.0), 1000}, true},
          {"epsilon equal to p(x) (strict >)", {px, 1000}, false},
          {"epsilon just above p(x)", {std::nextafter(px, 1.0), 1000}, false},
          {"delta * exp(-H) just below p(x)", {1.0, px * std::exp(H) * (1 - 1e-9)}, true},
          {"delta * exp(-H) just above p(x)", {1.0, px * std::exp(H) * (1 + 1e-9)}, false},
      };
      for (const Case& c : cases) {
        const std::string what = std::string(c.name) + ", " + to_string(mode) + " seed " + std::to_string(seed);
        VerifyInput in;
        in.tree = &tree;
        in.target_logits = &logits;
        in.sampling = sp;
        in.root_position = 9;
        const VerifyResult v = TypicalAcceptor(c.params).verify(in);
        EXPECT_EQ(v.decisions, (std::vector<uint8_t>{static_cast<uint8_t>(c.accept)})) << what;
        EXPECT_EQ(v.decision_nodes, (std::vector<int32_t>{0})) << what;
        EXPECT_EQ(v.accepted_nodes.size(), c.accept ? 1u : 0u) << what;
        EXPECT_EQ(v.emitted.size(), c.accept ? 2u : 1u) << what;
        EXPECT_TRUE(v.accept_probs.empty()) << what;
      }
    }
  }
}

// The defaults on hand-computed distributions: a flat p lowers the threshold below epsilon
// (entropy branch), a peaked one keeps epsilon.
TEST(TypicalAcceptance, DefaultsOnFlatAndPeakedDistributions) {
  // Flat: p = (0.5, 0.06, 0.02 x 22), H = 2.2365, delta * exp(-H) = 0.0320 < 0.09.
  const std::vector<double> flat = dist({0.5, 0.06}, 24);
  EXPECT_NEAR(typical_threshold(flat, {}), 0.3 * std::exp(-2.2365), 1e-4);
  // Peaked: p = (0.9, 0.08, 0.02), H = 0.375, delta * exp(-H) = 0.206 > 0.09.
  const std::vector<double> peaked = {0.9, 0.08, 0.02};
  EXPECT_EQ(typical_threshold(peaked, {}), 0.09);
  struct Case {
    const char* name;
    std::vector<double> p;
    int32_t token;
    bool accept;
  };
  const Case cases[] = {
      {"flat, p(x) = 0.06 < epsilon but above 0.032", flat, 1, true},
      {"flat, p(x) = 0.02", flat, 5, false},
      {"peaked, p(x) = 0.08 < epsilon = 0.09", peaked, 1, false},
      {"peaked, p(x) = 0.9", peaked, 0, true},
  };
  for (const Case& c : cases) {
    const Matrix logits = logits_of({c.p, c.p});
    const DraftTree tree = DraftTree::chain({c.token});
    VerifyInput in;
    in.tree = &tree;
    in.target_logits = &logits;
    in.sampling = sampling(SamplingParams::Mode::sample, 4);
    EXPECT_EQ(TypicalAcceptor().verify(in).accepted_nodes.size(), c.accept ? 1u : 0u) << c.name << ", seed 4";
  }
}

// Nodes (token, parent; the p of the token at its parent point), epsilon = 0.1 and delta = 1000 so
// that the threshold is exactly 0.1 everywhere:
//   n0 tok 0 root 0.5 ✓   n1 tok 1 root 0.2 ✓   n2 tok 2 root 0.05 ✗
//   n3 tok 3 <- n0 0.3 ✓  n4 tok 4 <- n1 0.4 ✓  n5 tok 5 <- n2 (never tested)
//   n6 tok 6 <- n3 0.05 ✗ [n7 tok 7 <- n4 0.5 ✓, in the deeper tree only]
// Log-likelihoods at depth 2: n3 log 0.15 > n4 log 0.08, although n4's own p is the larger.
struct TreeCase {
  DraftTree tree;
  Matrix logits;
};

TreeCase tree_case(bool deeper) {
  const int V = 8;
  TreeCase t;
  t.tree = DraftTree{{0, 1, 2, 3, 4, 5, 6}, {-1, -1, -1, 0, 1, 2, 3}};
  if (deeper) {
    t.tree.tokens.push_back(7);
    t.tree.parents.push_back(4);
  }
  const std::vector<double> flat = dist({}, V);  // 0.125 each
  std::vector<std::vector<double>> rows(static_cast<size_t>(t.tree.size()) + 1, flat);
  rows[0] = dist({0.5, 0.2, 0.05}, V);  // the others 0.05
  rows[1] = with(flat, 3, 0.3);         // after n0
  rows[2] = with(flat, 4, 0.4);         // after n1
  rows[4] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.05, 0.35};  // after n3: tok 6 at 0.05
  rows[5] = with(flat, 7, 0.5);         // after n4
  t.logits = logits_of(rows);
  return t;
}

TEST(TypicalAcceptance, TheLongestAcceptedPathWinsThenTheLikelierOne) {
  const TypicalAcceptor acceptor({0.1, 1000});
  for (const SamplingParams::Mode mode : kModes) {
    for (const uint64_t seed : {5u, 6u}) {
      const std::string what = to_string(mode) + " seed " + std::to_string(seed);
      // Depth 2 at most: n3 and n4 tie on depth; n3's path is the likelier.
      const TreeCase b = tree_case(false);
      VerifyInput in;
      in.tree = &b.tree;
      in.target_logits = &b.logits;
      in.sampling = sampling(mode, seed);
      in.sequence = 3;
      in.root_position = 20;
      const VerifyResult v = acceptor.verify(in);
      EXPECT_EQ(v.decision_nodes, (std::vector<int32_t>{0, 1, 2, 3, 4, 6})) << what << ": n5 sits under a rejection";
      EXPECT_EQ(v.decisions, (std::vector<uint8_t>{1, 1, 0, 1, 1, 0})) << what;
      EXPECT_EQ(v.accepted_nodes, (std::vector<int32_t>{0, 3})) << what;
      ASSERT_EQ(v.emitted.size(), 3u) << what;
      EXPECT_EQ(v.emitted[0], 0) << what;
      EXPECT_EQ(v.emitted[1], 3) << what;
      EXPECT_EQ(v.emitted[2], sample_token(row(b.logits, 4), 8, in.sampling, 3, 22)) << what << ": the target's draw after n3";
      EXPECT_EQ(v.bonus_token, -1) << what << ": n3 has a (rejected) child";
      // The deeper tree: n7 under the less likely n4 makes the longest path, and wins.
      const TreeCase a = tree_case(true);
      in.tree = &a.tree;
      in.target_logits = &a.logits;
      const VerifyResult w = acceptor.verify(in);
      EXPECT_EQ(w.decision_nodes, (std::vector<int32_t>{0, 1, 2, 3, 4, 6, 7})) << what;
      EXPECT_EQ(w.decisions, (std::vector<uint8_t>{1, 1, 0, 1, 1, 0, 1})) << what;
      EXPECT_EQ(w.accepted_nodes, (std::vector<int32_t>{1, 4, 7})) << what;
      ASSERT_EQ(w.emitted.size(), 4u) << what;
      EXPECT_EQ((std::vector<int32_t>(w.emitted.begin(), w.emitted.begin() + 3)), (std::vector<int32_t>{1, 4, 7})) << what;
      EXPECT_EQ(w.emitted[3], sample_token(row(a.logits, 8), 8, in.sampling, 3, 23)) << what;
      EXPECT_EQ(w.bonus_token, w.emitted[3]) << what << ": n7 is a leaf";
    }
  }
}

// Two paths of equal depth and bitwise equal log-likelihood: the earlier node wins; make the later
// one likelier and it wins instead.
TEST(TypicalAcceptance, AnExactTieGoesToTheEarlierNode) {
  const int V = 6;
  const DraftTree tree{{0, 1, 2, 2}, {-1, -1, 0, 1}};
  const std::vector<double> root = dist({0.3, 0.3}, V), child = with(dist({}, V), 2, 0.5);
  const Matrix tied = logits_of({root, child, child, child, child});
  const Matrix later = logits_of({root, child, with(dist({}, V), 2, 0.6), child, child});
  for (const SamplingParams::Mode mode : kModes) {
    const std::string what = to_string(mode) + " seed 8";
    VerifyInput in;
    in.tree = &tree;
    in.target_logits = &tied;
    in.sampling = sampling(mode, 8);
    const VerifyResult v = TypicalAcceptor({0.1, 1000}).verify(in);
    EXPECT_EQ(v.decisions, (std::vector<uint8_t>{1, 1, 1, 1})) << what;
    EXPECT_EQ(v.accepted_nodes, (std::vector<int32_t>{0, 2})) << what << ": the tie goes to the earlier node";
    in.target_logits = &later;
    EXPECT_EQ(TypicalAcceptor({0.1, 1000}).verify(in).accepted_nodes, (std::vector<int32_t>{1, 3})) << what;
  }
}

// The token after the accepted path is the target's own draw at that position under the run's
// sampling: sample_token (sample: the keyed uniform, recorded; coupled: Gumbel-max). It is NOT
// Medusa's typical-truncated draw: tokens below the threshold come out too.
TEST(TypicalAcceptance, TheNextTokenIsTheRunsOwnDraw) {
  const int V = 24;
  const std::vector<double> p = dist({0.5, 0.06}, V);  // 22 tokens at 0.02, below tau = 0.032
  const Matrix logits = logits_of({p, p});
  const DraftTree tree = DraftTree::chain({7});  // p = 0.02: rejected
  const double tau = typical_threshold(p, {});
  for (const SamplingParams::Mode mode : kModes) {
    int below = 0;
    for (uint64_t seed = 0; seed < 200; ++seed) {
      const std::string what = to_string(mode) + " seed " + std::to_string(seed);
      VerifyInput in;
      in.tree = &tree;
      in.target_logits = &logits;
      in.sampling = sampling(mode, seed);
      in.sequence = 1;
      in.root_position = 31;
      const VerifyResult v = TypicalAcceptor().verify(in);
      ASSERT_TRUE(v.accepted_nodes.empty()) << what;
      ASSERT_EQ(v.emitted.size(), 1u) << what;
      EXPECT_EQ(v.emitted[0], sample_token(row(logits, 0), V, in.sampling, 1, 31)) << what;
      EXPECT_EQ(v.bonus_token, -1) << what;
      if (mode == SamplingParams::Mode::sample) {
        ASSERT_EQ(v.draws.size(), 1u) << what;
        EXPECT_EQ(v.draws[0].purpose, static_cast<uint32_t>(RandomPurpose::sample)) << what;
        EXPECT_EQ(v.draws[0].position, 31u) << what;
        EXPECT_EQ(v.draws[0].seed, seed) << what;
        EXPECT_EQ(v.draws[0].sequence, 1u) << what;
      } else {
        EXPECT_TRUE(v.draws.empty()) << what;
      }
      if (probabilities(row(logits, 0), V, in.sampling)[static_cast<size_t>(v.emitted[0])] < tau) ++below;
    }
    EXPECT_GT(below, 20) << to_string(mode) << " seeds 0..199: the next token is not truncated to the typical set";
  }
  // An empty tree: the next token is the bonus.
  const DraftTree empty;
  VerifyInput in;
  in.tree = &empty;
  const Matrix one = logits_of({p});
  in.target_logits = &one;
  in.sampling = sampling(SamplingParams::Mode::coupled, 9);
  const VerifyResult e = TypicalAcceptor().verify(in);
  ASSERT_EQ(e.emitted.size(), 1u) << "coupled seed 9";
  EXPECT_EQ(e.bonus_token, e.emitted[0]) << "coupled seed 9";
}

TEST(TypicalAcceptance, GreedyIsRefusedAndTheInputChecked) {
  const Matrix logits = logits_of({dist({0.5}, 4), dist({0.5}, 4)});
  const DraftTree tree = DraftTree::chain({0});
  VerifyInput in;
  in.tree = &tree;
  in.target_logits = &logits;
  const TypicalAcceptor acceptor;
  EXPECT_EQ(acceptor.name(), "typical");
  EXPECT_CONTAINS(error_of([&] { acceptor.verify(in); }), "greedy sampling is refused");
  EXPECT_CONTAINS(error_of([&] { acceptor.verify(in); }), "exact matching");
  for (const SamplingParams::Mode mode : {SamplingParams::Mode::greedy, SamplingParams::Mode::sample, SamplingParams::Mode::coupled})
    EXPECT_FALSE(acceptor.takes_argmax(sampling(mode, 0))) << to_string(mode);
  in.sampling = sampling(SamplingParams::Mode::sample, 0);
  const std::vector<int32_t> argmax_rows = {0, 0};
  VerifyInput am = in;
  am.target_logits = nullptr;
  am.target_argmax = &argmax_rows;
  am.vocab = 4;
  EXPECT_CONTAINS(error_of([&] { acceptor.verify(am); }), "target logits are required");
  const DraftTree two = DraftTree::chain({0, 1});
  in.tree = &two;
  EXPECT_CONTAINS(error_of([&] { acceptor.verify(in); }), "2 target logit rows for 2 draft nodes; expected one at the root plus one after each node (3)");
}

// Deterministic; with sample mode and coupled; and a decode whose threshold no draft can pass
// (epsilon = 1, delta = 1000: tau = 1) is sequential decoding token for token.
TEST(TypicalAcceptance, DecodesDeterministicallyAndAcceptingNothingIsSequential) {
  const ModelConfig tc = testing::tiny_llama();
  const Transformer target = testing::make_model(tc, 7);
  ModelConfig dc = tc;
  dc.num_hidden_layers = 1;
  const Transformer draft = testing::make_model(dc, 8);
  GenerationOptions go;
  go.max_new_tokens = 24;
  go.stop_at_eos = false;
  const std::vector<int32_t> prompt = {3, 14, 15};
  for (const SamplingParams::Mode mode : kModes) {
    for (const uint64_t seed : {11u, 12u}) {
      const std::string what = to_string(mode) + " seed " + std::to_string(seed);
      SamplingParams sp = sampling(mode, seed);
      sp.temperature = 0.7;
      const GenerationResult sequential = decode_sequential(target, prompt, sp, go);
      DraftModelProposer never_proposer(draft, tc, 4, 128);
      const GenerationResult never = decode_speculative(target, never_proposer, TypicalAcceptor({1.0, 1000}), prompt, sp, go);
      EXPECT_EQ(never.tokens, sequential.tokens) << what;
      EXPECT_EQ(never.stats.accepted_tokens, 0) << what;
      DraftModelProposer p1(draft, tc, 4, 128), p2(draft, tc, 4, 128);
      const GenerationResult a = decode_speculative(target, p1, TypicalAcceptor(), prompt, sp, go);
      const GenerationResult b = decode_speculative(target, p2, TypicalAcceptor(), prompt, sp, go);
      EXPECT_EQ(a.tokens, b.tokens) << what;
      EXPECT_EQ(a.stats.accepted_per_step, b.stats.accepted_per_step) << what;
      EXPECT_EQ(a.tokens.size(), 24u) << what;
    }
  }
}

TEST(TypicalAcceptance, ParsesAndRoundTrips) {
  EXPECT_EQ(parse_typical_acceptance(""), TypicalAcceptance{});
  EXPECT_EQ(parse_typical_acceptance("epsilon=0.09,delta=0.3"), TypicalAcceptance{});
  EXPECT_EQ(parse_typical_acceptance("epsilon=0.2"), (TypicalAcceptance{0.2, 0.3}));
  EXPECT_EQ(parse_typical_acceptance("delta=0.5"), (TypicalAcceptance{0.09, 0.5}));
  EXPECT_EQ(parse_typical_acceptance("delta=1000,epsilon=1"), (TypicalAcceptance{1, 1000}));
  EXPECT_EQ(TypicalAcceptance{}.to_string(), "epsilon=0.09,delta=0.3");
  for (const char* s : {"", "epsilon=0.1", "delta=2.5", "epsilon=0.123456789012345,delta=0.3000000000000001", "epsilon=1e-300,delta=1000"}) {
    const TypicalAcceptance t = parse_typical_acceptance(s);
    EXPECT_EQ(parse_typical_acceptance(t.to_string()), t) << s;
    const nlohmann::json j = t;
    EXPECT_EQ(j.get<TypicalAcceptance>(), t) << j.dump();
    EXPECT_EQ(nlohmann::json::parse(j.dump()).get<TypicalAcceptance>(), t) << j.dump();
  }
  EXPECT_EQ(nlohmann::json(TypicalAcceptance{}), nlohmann::json::parse(R"({"epsilon":0.09,"delta":0.3,"spec":"epsilon=0.09,delta=0.3"})"));
  EXPECT_EQ(nlohmann::json::parse(R"({"delta":0.5})").get<TypicalAcceptance>(), (TypicalAcceptance{0.09, 0.5}));
  EXPECT_EQ(nlohmann::json::parse(R"({})").get<TypicalAcceptance>(), TypicalAcceptance{});
}

TEST(TypicalAcceptance, ParserErrorsSayWhatIsWrongAndWhatIsExpected) {
  struct Case {
    const char* spec;
    const char* fragment;
  };
  const Case cases[] = {
      {"epsilon=0", "epsilon 0 is outside (0, 1]"},
      {"epsilon=1.5", "epsilon 1.5 is outside (0, 1]"},
      {"epsilon=-0.1", "epsilon -0.1 is outside (0, 1]"},
      {"epsilon=nan", "epsilon is not finite"},
      {"epsilon=inf", "epsilon is not finite"},
      {"delta=0", "delta 0 is outside (0, 1e3]"},
      {"delta=1001", "delta 1001 is outside (0, 1e3]"},
      {"delta=x", "delta 'x' is not a number; expected a number in (0, 1e3]"},
      {"epsilon=", "epsilon '' is not a number"},
      {"epsilon=0.1,", "item 2 is empty"},
      {"epsilon=0.1,epsilon=0.2", "epsilon is given twice"},
      {"alpha=0.3", "unknown key 'alpha'; expected epsilon=E,delta=D"},
      {"0.09", "'0.09' is not KEY=VALUE"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of([&] { parse_typical_acceptance(c.spec); });
    EXPECT_CONTAINS(e, c.fragment);
    EXPECT_CONTAINS(e, std::string("typical acceptance '") + c.spec + "'");
  }
  const auto json_error = [](const char* text) { return error_of([&] { nlohmann::json::parse(text).get<TypicalAcceptance>(); }); };
  EXPECT_CONTAINS(json_error(R"([0.1])"), "is not an object");
  EXPECT_CONTAINS(json_error(R"({"alpha":0.3})"), "unknown key \"alpha\"");
  EXPECT_CONTAINS(json_error(R"({"epsilon":"0.1"})"), "\"epsilon\" is \"0.1\", not a number");
  EXPECT_CONTAINS(json_error(R"({"epsilon":2})"), "epsilon 2 is outside (0, 1]");
  TypicalAcceptance bad;
  bad.delta = -1;
  EXPECT_CONTAINS(error_of([&] { TypicalAcceptor a(bad); }), "delta -1 is outside (0, 1e3]");
  bad = {};
  bad.epsilon = std::nan("");
  EXPECT_CONTAINS(error_of([&] { bad.validate(); }), "epsilon is not finite");
}

}  // namespace
}  // namespace specdec
