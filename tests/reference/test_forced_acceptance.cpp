// ForcedAcceptor (benchmarking at a chosen acceptance, with the serving engines' semantics): vLLM's
// unconditional per-position rates, the minimum-variance schedule of al= (vLLM / SGLang /
// TensorRT-LLM) and TensorRT-LLM's real accepted count, measured against their exact
// distributions; the first-child walk and the target's token at the stop, determinism, the
// parser's and the JSON reader's errors.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "reference/acceptance/forced_acceptor.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/sampling/sampler.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/model_fixtures.hpp"

namespace specdec {
namespace {

using testing::error_of;

constexpr int kVocab = 11;

// (K + 1, V) logits whose row r has its argmax at token (r + 5) % V and a spread-out softmax.
Matrix logits_for(int rows) {
  Matrix m(rows, kVocab);
  for (int r = 0; r < rows; ++r)
    for (int v = 0; v < kVocab; ++v) m(r, v) = 0.1f * static_cast<float>((v * 7 + r * 3) % kVocab) + (v == (r + 5) % kVocab ? 2.0f : 0.0f);
  return m;
}

// What `steps` decoding steps on a chain of K drafts did: tokens per step, attempts and accepts by
// depth. The root advances by the tokens each step emitted, as in decoding.
struct ChainRun {
  std::vector<int> tokens_per_step;
  std::vector<int> attempts, accepts;  // (K) by depth
  double mean() const {
    double s = 0;
    for (int t : tokens_per_step) s += t;
    return s / static_cast<double>(tokens_per_step.size());
  }
};

ChainRun run_chain(const ForcedAcceptor& acceptor, int K, int steps, uint64_t seed, uint32_t sequence) {
  std::vector<int32_t> tokens(static_cast<size_t>(K));
  for (int i = 0; i < K; ++i) tokens[static_cast<size_t>(i)] = (i * 3 + 1) % kVocab;
  const DraftTree tree = DraftTree::chain(tokens);
  const Matrix logits = logits_for(K + 1);
  VerifyInput in;
  in.tree = &tree;
  in.target_logits = &logits;
  in.sampling.seed = seed;
  in.sequence = sequence;
  in.root_position = 17;
  ChainRun run;
  run.attempts.assign(static_cast<size_t>(K), 0);
  run.accepts.assign(static_cast<size_t>(K), 0);
  for (int s = 0; s < steps; ++s) {
    const VerifyResult v = acceptor.verify(in);
    run.tokens_per_step.push_back(static_cast<int>(v.emitted.size()));
    for (size_t i = 0; i < v.decisions.size(); ++i) {
      const int d = tree.depth(v.decision_nodes[i]);
      ++run.attempts[static_cast<size_t>(d - 1)];
      run.accepts[static_cast<size_t>(d - 1)] += v.decisions[i];
    }
    in.root_position += static_cast<int32_t>(v.emitted.size());
  }
  return run;
}

// Mean and variance of tokens per step on a chain of K with per-depth rates rate(d).
std::pair<double, double> exact_moments(const ForcedAcceptance& f, int K) {
  double reach = 1, mean = 0, second = 0;  // reach: P(depths 1..j all accepted)
  for (int j = 0; j <= K; ++j) {
    const double stop = j < K ? reach * (1 - f.rate(j + 1, K)) : reach;  // P(exactly j accepted)
    mean += stop * (j + 1);
    second += stop * (j + 1) * (j + 1);
    if (j < K) reach *= f.rate(j + 1, K);
  }
  return {mean, second - mean * mean};
}

// Fixed seeds and sequences: 4 runs of 5000 steps, n = 20000 steps. Tolerances are 5 standard
// errors of the exact distribution (the test is deterministic; 5 sigma leaves no flakiness
// should the stream change).
constexpr int kStepsPerRun = 5000;
const std::vector<std::pair<uint64_t, uint32_t>> kRuns = {{0, 0}, {1, 0}, {42, 3}, {0xfeedULL, 9}};

ChainRun pooled(const ForcedAcceptor& acceptor, int K) {
  ChainRun all;
  all.attempts.assign(static_cast<size_t>(K), 0);
  all.accepts.assign(static_cast<size_t>(K), 0);
  for (const auto& [seed, sequence] : kRuns) {
    const ChainRun r = run_chain(acceptor, K, kStepsPerRun, seed, sequence);
    all.tokens_per_step.insert(all.tokens_per_step.end(), r.tokens_per_step.begin(), r.tokens_per_step.end());
    for (int d = 0; d < K; ++d) {
      all.attempts[static_cast<size_t>(d)] += r.attempts[static_cast<size_t>(d)];
      all.accepts[static_cast<size_t>(d)] += r.accepts[static_cast<size_t>(d)];
    }
  }
  return all;
}

// The statistical tests below use n = 20000 steps: kRuns' seeds/sequences (0, 0), (1, 0), (42, 3),
// (0xfeed, 9), 5000 steps each, root position 17 advancing by the tokens each step emitted.

TEST(ForcedAcceptance, RatesAreVllmsUnconditionalRates) {
  // vLLM synthetic_acceptance_rates: p_i = P(the first i drafts all accepted). 0.9, 0.54 are the
  // conditional rates 0.9 and 0.54 / 0.9 = 0.6; depths beyond the list are never accepted.
  const ForcedAcceptance f = parse_forced_acceptance("rates=0.9,0.54");
  constexpr int K = 4;
  EXPECT_DOUBLE_EQ(f.rate(1, K), 0.9);
  EXPECT_NEAR(f.rate(2, K), 0.6, 1e-15);
  EXPECT_EQ(f.rate(3, K), 0.0);
  EXPECT_EQ(f.rate(4, K), 0.0);
  EXPECT_EQ(f.unconditional_rate(0, K), 1.0);
  EXPECT_EQ(f.unconditional_rate(2, K), 0.54);
  EXPECT_EQ(f.unconditional_rate(3, K), 0.0);
  const double want = 1 + 0.9 + 0.54;
  EXPECT_NEAR(expected_acceptance_length(f, K), want, 1e-12);
  const auto [mean, var] = exact_moments(f, K);
  EXPECT_NEAR(mean, want, 1e-12);
  const ChainRun r = pooled(ForcedAcceptor(f), K);
  const double n = static_cast<double>(r.tokens_per_step.size());
  ASSERT_EQ(n, 20000);
  EXPECT_NEAR(r.mean(), want, 5 * std::sqrt(var / n)) << "n = " << n;
  for (int t : r.tokens_per_step) EXPECT_LE(t, 3) << "depth 3 is beyond the list: never accepted";
  // Each depth's conditional acceptance rate, within 5 binomial standard errors: 0.9, 0.6, then 0.
  for (int d = 1; d <= 2; ++d) {
    const double a = r.attempts[static_cast<size_t>(d - 1)], rate = f.rate(d, K);
    ASSERT_GT(a, 1000) << "depth " << d;
    EXPECT_NEAR(r.accepts[static_cast<size_t>(d - 1)] / a, rate, 5 * std::sqrt(rate * (1 - rate) / a)) << "depth " << d;
  }
  EXPECT_GT(r.attempts[2], 1000);
  EXPECT_EQ(r.accepts[2], 0);
  EXPECT_EQ(r.attempts[3], 0);
  // One draw per tried position within the list; none beyond it.
  const DraftTree chain = DraftTree::chain({1, 2, 3, 4});
  const Matrix logits = logits_for(5);
  VerifyInput in;
  in.tree = &chain;
  in.target_logits = &logits;
  const ForcedAcceptor all(parse_forced_acceptance("rates=1,1"));
  const VerifyResult v = all.verify(in);
  EXPECT_EQ(v.accepted_nodes, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(v.decisions, (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(v.draws.size(), 2u);

  // Conditional conversion: equal rates are conditional 1; after a 0 everything is 0; a list
  // shorter than K is 0 beyond it, so the expected length counts only the listed positions.
  const ForcedAcceptance g = parse_forced_acceptance("rates=0.8,0.8,0,0");
  EXPECT_EQ(g.rate(2, 4), 1.0);
  EXPECT_EQ(g.rate(3, 4), 0.0);
  EXPECT_EQ(g.rate(4, 4), 0.0);
  EXPECT_NEAR(expected_acceptance_length(g, 4), 2.6, 1e-12);
  EXPECT_NEAR(expected_acceptance_length(parse_forced_acceptance("rates=0.9,0.54"), 1), 1.9, 1e-12);
  EXPECT_EQ(expected_acceptance_length(parse_forced_acceptance("rates=0.9,0.54"), 0), 1.0);
}

// Tokens per step -> count, over a pooled run.
std::map<int, int> histogram(const ChainRun& r) {
  std::map<int, int> h;
  for (int t : r.tokens_per_step) ++h[t];
  return h;
}

TEST(ForcedAcceptance, AcceptanceLengthIsTheMinimumVarianceSchedule) {
  constexpr int K = 4;
  // vLLM's example: L = 2.6, K = 3 -> unconditional rates [1, 0.6, 0].
  const ForcedAcceptance ex = parse_forced_acceptance("al=2.6");
  EXPECT_EQ(ex.unconditional_rate(1, 3), 1.0);
  EXPECT_NEAR(ex.unconditional_rate(2, 3), 0.6, 1e-15);
  EXPECT_EQ(ex.unconditional_rate(3, 3), 0.0);
  EXPECT_NEAR(expected_acceptance_length(ex, 3), 2.6, 1e-15);

  // al = 3.4, K = 4: 2 or 3 drafts accepted (3 or 4 tokens), 3 with probability 0.4.
  const ForcedAcceptance f = parse_forced_acceptance("al=3.4");
  const double p = f.target_drafts() - 2;  // frac(L - 1): 0.4 up to rounding of 3.4
  EXPECT_NEAR(p, 0.4, 1e-15);
  EXPECT_EQ(f.rate(1, K), 1.0);
  EXPECT_EQ(f.rate(2, K), 1.0);
  EXPECT_NEAR(f.rate(3, K), 0.4, 1e-15);
  EXPECT_EQ(f.rate(4, K), 0.0);
  EXPECT_NEAR(expected_acceptance_length(f, K), 3.4, 1e-15);
  const ChainRun r = pooled(ForcedAcceptor(f), K);
  const double n = static_cast<double>(r.tokens_per_step.size());
  ASSERT_EQ(n, 20000);
  const std::map<int, int> h = histogram(r);
  EXPECT_EQ(h.size(), 2u) << "only 3 or 4 tokens per step";
  EXPECT_EQ(h.count(3) + h.count(4), h.size());
  const double p3 = h.count(4) ? h.at(4) / n : 0.0;
  EXPECT_NEAR(p3, p, 5 * std::sqrt(p * (1 - p) / n)) << "n = " << n;
  EXPECT_NEAR(r.mean(), 3.4, 5 * std::sqrt(p * (1 - p) / n));

  // One draw per step, at the root position, index 0.
  const DraftTree chain = DraftTree::chain({1, 2, 3, 4});
  const Matrix logits = logits_for(5);
  VerifyInput in;
  in.tree = &chain;
  in.target_logits = &logits;
  in.sampling.seed = 5;
  in.sequence = 3;
  for (int32_t root = 0; root < 40; ++root) {
    in.root_position = root;
    const VerifyResult v = ForcedAcceptor(f).verify(in);
    ASSERT_EQ(v.draws.size(), 1u);
    EXPECT_EQ(v.draws[0].position, static_cast<uint32_t>(root));
    EXPECT_EQ(v.draws[0].purpose, static_cast<uint32_t>(RandomPurpose::forced));
    EXPECT_EQ(v.draws[0].index, 0u);
    EXPECT_EQ(v.draws[0].sequence, 3u);
    EXPECT_EQ(v.accepted_nodes.size(), v.draws[0].value < p ? 3u : 2u);
    EXPECT_EQ(v.decisions, v.draws[0].value < p ? (std::vector<uint8_t>{1, 1, 1, 0}) : (std::vector<uint8_t>{1, 1, 0}));
  }

  // Capped at K: al = 6 (and al = 5.5, floor(L - 1) = 4 = K) accepts all 4 drafts every step, no draw.
  for (const char* spec : {"al=6", "al=5.5", "al=5", "al=1e6"}) {
    const ForcedAcceptance c = parse_forced_acceptance(spec);
    EXPECT_EQ(expected_acceptance_length(c, K), 5.0) << spec;
    for (int t : run_chain(ForcedAcceptor(c), K, 200, 3, 0).tokens_per_step) EXPECT_EQ(t, K + 1) << spec;
    EXPECT_TRUE(ForcedAcceptor(c).verify(in).draws.empty()) << spec;
  }
  // Whole lengths are exact: al = 3 accepts 2 every step, al = 1 none, without a draw.
  for (const auto& [spec, tokens] : std::vector<std::pair<std::string, int>>{{"al=3", 3}, {"al=1", 1}}) {
    for (int t : run_chain(ForcedAcceptor(parse_forced_acceptance(spec)), K, 200, 3, 0).tokens_per_step) EXPECT_EQ(t, tokens) << spec;
    EXPECT_TRUE(ForcedAcceptor(parse_forced_acceptance(spec)).verify(in).draws.empty()) << spec;
  }
  // al = 4.5, K = 4: floor 3 < K, so 3 or 4 drafts.
  const std::map<int, int> h45 = histogram(run_chain(ForcedAcceptor(parse_forced_acceptance("al=4.5")), K, 400, 1, 0));
  EXPECT_EQ(h45.size(), 2u);
  EXPECT_TRUE(h45.count(4) && h45.count(5));
}

TEST(ForcedAcceptance, AcceptedIsTensorRtLlmsCount) {
  constexpr int K = 4;
  // accepted = 1.5: 1 or 2 drafts (2 or 3 tokens), 2 with probability 0.5.
  const ForcedAcceptance f = parse_forced_acceptance("accepted=1.5");
  EXPECT_EQ(f.target_drafts(), 1.5);
  EXPECT_EQ(expected_acceptance_length(f, K), 2.5);
  const ChainRun r = pooled(ForcedAcceptor(f), K);
  const double n = static_cast<double>(r.tokens_per_step.size());
  ASSERT_EQ(n, 20000);
  const std::map<int, int> h = histogram(r);
  EXPECT_EQ(h.size(), 2u) << "only 2 or 3 tokens per step";
  EXPECT_EQ(h.count(2) + h.count(3), h.size());
  EXPECT_NEAR((h.count(3) ? h.at(3) : 0) / n, 0.5, 5 * std::sqrt(0.25 / n)) << "n = " << n;
  // The same draws as al = X + 1.
  const ForcedAcceptor al(parse_forced_acceptance("al=2.5"));
  EXPECT_EQ(run_chain(ForcedAcceptor(f), K, 500, 42, 3).tokens_per_step, run_chain(al, K, 500, 42, 3).tokens_per_step);

  const ForcedAcceptor two(parse_forced_acceptance("accepted=2"));
  for (int k = 2; k <= 6; ++k) {
    const ChainRun c = run_chain(two, k, 20, 5, 1);
    for (int t : c.tokens_per_step) EXPECT_EQ(t, 3) << "K = " << k;
  }
  // Capped at the depth: K = 1 emits the draft and the bonus token.
  for (int t : run_chain(two, 1, 5, 5, 1).tokens_per_step) EXPECT_EQ(t, 2);
  for (int t : run_chain(ForcedAcceptor(parse_forced_acceptance("accepted=0")), 4, 5, 5, 1).tokens_per_step) EXPECT_EQ(t, 1);
  for (int t : run_chain(ForcedAcceptor(parse_forced_acceptance("accepted=3.7")), 3, 50, 5, 1).tokens_per_step) EXPECT_EQ(t, 4);

  const DraftTree chain = DraftTree::chain({4, 2, 9, 7});
  const Matrix logits = logits_for(5);
  VerifyInput in;
  in.tree = &chain;
  in.target_logits = &logits;
  VerifyResult v = two.verify(in);
  EXPECT_EQ(v.accepted_nodes, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(v.emitted, (std::vector<int32_t>{4, 2, (2 + 5) % kVocab}));  // then row 2's argmax
  EXPECT_EQ(v.decisions, (std::vector<uint8_t>{1, 1, 0}));
  EXPECT_EQ(v.decision_nodes, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(v.bonus_token, -1);
  EXPECT_TRUE(v.draws.empty()) << "a whole count draws nothing";
}

TEST(ForcedAcceptance, WalksTheFirstChildPathOfATree) {
  const DraftTree tree{{5, 6, 7, 8}, {-1, -1, 0, 2}};  // root -> 0 -> 2 -> 3, and 1 beside 0
  const Matrix logits = logits_for(5);
  VerifyInput in;
  in.tree = &tree;
  in.target_logits = &logits;
  const VerifyResult all = ForcedAcceptor(parse_forced_acceptance("accepted=9")).verify(in);
  EXPECT_EQ(all.accepted_nodes, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_EQ(all.emitted, (std::vector<int32_t>{5, 7, 8, (4 + 5) % kVocab}));
  EXPECT_EQ(all.bonus_token, (4 + 5) % kVocab);
  EXPECT_EQ(all.decisions, (std::vector<uint8_t>{1, 1, 1}));
  // Rate 0: the first child is rejected, its sibling is not tried; the target's root choice follows.
  const VerifyResult none = ForcedAcceptor(parse_forced_acceptance("rates=0")).verify(in);
  EXPECT_TRUE(none.accepted_nodes.empty());
  EXPECT_EQ(none.decision_nodes, (std::vector<int32_t>{0}));
  EXPECT_EQ(none.emitted, (std::vector<int32_t>{5}));
  // K for al is the first-child path's depth (3 here): al = 4 accepts everything.
  EXPECT_EQ(ForcedAcceptor(parse_forced_acceptance("al=4")).verify(in).accepted_nodes, (std::vector<int32_t>{0, 2, 3}));
  // An empty tree: the target's token is the bonus.
  const DraftTree empty;
  const Matrix one = logits_for(1);
  in.tree = &empty;
  in.target_logits = &one;
  const VerifyResult e = ForcedAcceptor(parse_forced_acceptance("rates=1")).verify(in);
  EXPECT_EQ(e.emitted, (std::vector<int32_t>{5}));
  EXPECT_EQ(e.bonus_token, 5);
}

TEST(ForcedAcceptance, TheStopTokenIsTheTargetsChoice) {
  const DraftTree chain = DraftTree::chain({1, 2, 3, 4, 5, 6});
  const Matrix logits = logits_for(7);
  // Unconditional 0.5^d: each depth's conditional rate is exactly 0.5.
  const ForcedAcceptor acceptor(parse_forced_acceptance("rates=0.5,0.25,0.125,0.0625,0.03125,0.015625"));
  EXPECT_TRUE(acceptor.takes_argmax(SamplingParams{}));
  for (const SamplingParams::Mode mode : {SamplingParams::Mode::greedy, SamplingParams::Mode::sample, SamplingParams::Mode::coupled}) {
    SamplingParams sp;
    sp.mode = mode;
    sp.temperature = 1.5;
    sp.seed = 77;
    EXPECT_EQ(acceptor.takes_argmax(sp), mode == SamplingParams::Mode::greedy);
    for (int32_t root = 10; root < 60; ++root) {
      VerifyInput in;
      in.tree = &chain;
      in.target_logits = &logits;
      in.sampling = sp;
      in.sequence = 2;
      in.root_position = root;
      const VerifyResult v = acceptor.verify(in);
      const int a = static_cast<int>(v.accepted_nodes.size());
      ASSERT_EQ(static_cast<int>(v.emitted.size()), a + 1);
      const uint32_t position = static_cast<uint32_t>(root + a);
      EXPECT_EQ(v.emitted.back(), sample_token(logits.data() + static_cast<std::ptrdiff_t>(a) * kVocab, kVocab, sp, 2, position))
          << to_string(mode) << " root " << root;
      // One draw per decision, keyed by the child's position with the forced purpose.
      ASSERT_EQ(v.draws.size(), v.decisions.size());
      for (size_t i = 0; i < v.draws.size(); ++i) {
        EXPECT_EQ(v.draws[i].purpose, static_cast<uint32_t>(RandomPurpose::forced));
        EXPECT_EQ(v.draws[i].position, static_cast<uint32_t>(root + static_cast<int>(i)));
        EXPECT_EQ(v.draws[i].sequence, 2u);
        EXPECT_EQ(v.draws[i].seed, 77u);
        EXPECT_EQ(v.decisions[i], v.draws[i].value < 0.5 ? 1 : 0);
      }
      if (mode == SamplingParams::Mode::greedy) {  // the argmax rows give the same result
        std::vector<int32_t> argmax_rows;
        for (int r = 0; r < 7; ++r) argmax_rows.push_back(argmax(logits.data() + static_cast<std::ptrdiff_t>(r) * kVocab, kVocab));
        VerifyInput am = in;
        am.target_logits = nullptr;
        am.target_argmax = &argmax_rows;
        am.vocab = kVocab;
        const VerifyResult w = acceptor.verify(am);
        EXPECT_EQ(w.emitted, v.emitted);
        EXPECT_EQ(w.decisions, v.decisions);
        EXPECT_EQ(w.draws, v.draws);
      }
    }
  }
  EXPECT_EQ(to_string(RandomPurpose::forced), "forced");
  EXPECT_EQ(static_cast<uint32_t>(RandomPurpose::forced), 8u);
}

TEST(ForcedAcceptance, Deterministic) {
  for (const char* spec : {"rates=0.7,0.5,0.3,0.2,0.1", "al=2.5", "accepted=0.7"}) {
    const ForcedAcceptor acceptor(parse_forced_acceptance(spec));
    const ChainRun a = run_chain(acceptor, 5, 300, 11, 4), b = run_chain(acceptor, 5, 300, 11, 4);
    EXPECT_EQ(a.tokens_per_step, b.tokens_per_step) << spec;
    EXPECT_EQ(a.accepts, b.accepts) << spec;
    EXPECT_NE(run_chain(acceptor, 5, 300, 12, 4).tokens_per_step, a.tokens_per_step) << spec << ": another seed, other decisions";
    EXPECT_NE(run_chain(acceptor, 5, 300, 11, 5).tokens_per_step, a.tokens_per_step) << spec << ": another sequence, other decisions";
  }
}

// A whole decode with a drafter the target never agrees with: accepted=2 accepts 2 every step.
TEST(ForcedAcceptance, DecodesAtTheForcedCount) {
  const ModelConfig tc = testing::tiny_llama();
  const Transformer target = testing::make_model(tc, 7);
  ModelConfig dc = tc;
  dc.num_hidden_layers = 1;
  const Transformer draft = testing::make_model(dc, 8);
  DraftModelProposer proposer(draft, tc, 4, 128);
  GenerationOptions go;
  go.max_new_tokens = 31;
  go.stop_at_eos = false;
  const ForcedAcceptor acceptor(parse_forced_acceptance("accepted=2"));
  const GenerationResult r = decode_speculative(target, proposer, acceptor, {3, 14, 15}, SamplingParams{}, go);
  ASSERT_EQ(r.tokens.size(), 31u);
  EXPECT_EQ(r.stats.steps, 10);  // the prefill's token, then 10 steps of 3
  ASSERT_EQ(r.stats.accepted_per_step.size(), 3u);
  EXPECT_EQ(r.stats.accepted_per_step[2], 10);
  EXPECT_DOUBLE_EQ(r.stats.acceptance_length(), 3.0);
}

TEST(ForcedAcceptance, ParsesAndRoundTrips) {
  ForcedAcceptance f = parse_forced_acceptance("rates=0.9,0.8,0.7");
  EXPECT_EQ(f.kind, ForcedAcceptance::Kind::rates);
  EXPECT_EQ(f.rates, (std::vector<double>{0.9, 0.8, 0.7}));
  EXPECT_EQ(f.rate(1, 9), 0.9);
  EXPECT_DOUBLE_EQ(f.rate(3, 9), 0.7 / 0.8);
  EXPECT_EQ(f.rate(4, 9), 0.0);
  EXPECT_EQ(f.rate(9, 9), 0.0);
  f = parse_forced_acceptance("al=3.2");
  EXPECT_EQ(f.kind, ForcedAcceptance::Kind::acceptance_length);
  EXPECT_EQ(f.acceptance_length, 3.2);
  f = parse_forced_acceptance("accepted=3");
  EXPECT_EQ(f.kind, ForcedAcceptance::Kind::accepted);
  EXPECT_EQ(f.accepted, 3.0);
  EXPECT_EQ(parse_forced_acceptance("accepted=1.5").accepted, 1.5);
  for (const std::string s : {"rates=0.9,0.8,0.7", "rates=1,0", "rates=0.9,0.54", "rates=0.5,0.5", "al=3.2", "al=1", "al=1e+06",
                              "accepted=0", "accepted=4096", "accepted=1.5", "accepted=0.25"}) {
    const ForcedAcceptance p = parse_forced_acceptance(s);
    EXPECT_EQ(p.to_string(), s);
    EXPECT_EQ(parse_forced_acceptance(p.to_string()), p) << s;
    const nlohmann::json j = p;
    EXPECT_EQ(j["spec"], s);
    EXPECT_EQ(j.get<ForcedAcceptance>(), p) << j.dump();
  }
  EXPECT_EQ(nlohmann::json(parse_forced_acceptance("al=2.5")), nlohmann::json::parse(R"({"kind":"al","al":2.5,"spec":"al=2.5"})"));
  EXPECT_EQ(nlohmann::json(parse_forced_acceptance("rates=0.5,0.25")),
            nlohmann::json::parse(R"({"kind":"rates","rates":[0.5,0.25],"spec":"rates=0.5,0.25"})"));
  EXPECT_EQ(nlohmann::json(parse_forced_acceptance("accepted=3")).dump(), R"({"accepted":3,"kind":"accepted","spec":"accepted=3"})");
  EXPECT_EQ(nlohmann::json(parse_forced_acceptance("accepted=1.5")).dump(), R"({"accepted":1.5,"kind":"accepted","spec":"accepted=1.5"})");
  EXPECT_EQ(nlohmann::json::parse(R"({"kind":"accepted","accepted":2.25})").get<ForcedAcceptance>(), parse_forced_acceptance("accepted=2.25"));
}

TEST(ForcedAcceptance, ParserErrorsSayWhatIsWrongAndWhatIsExpected) {
  struct Case {
    std::string spec;
    std::vector<std::string> fragments;
  };
  const std::vector<Case> cases = {
      {"", {"empty specification", "rates=P1,P2,...", "unconditional", "non-increasing", "al=LENGTH", "accepted=X", "[0, 4096]"}},
      {"0.9", {"'0.9'", "expected FORM=VALUE", "rates=", "al=", "accepted="}},
      {"rate=0.9", {"unknown form 'rate'", "rates=P1,P2,..."}},
      {"AL=3", {"unknown form 'AL'"}},
      {"rates=", {"no rates", "in [0, 1]", "non-increasing"}},
      {"rates=0.9,,0.8", {"'rates=0.9,,0.8'", "rate 2 is empty"}},
      {"rates=0.9,", {"rate 2 is empty"}},
      {"rates=abc", {"rate 1 'abc' is not a number", "[0, 1]"}},
      {"rates=0.9, 0.8", {"rate 2 ' 0.8' is not a number"}},
      {"rates=0.9,1.5", {"rate 2 = 1.5 is outside [0, 1]"}},
      {"rates=-0.1", {"rate 1 = -0.1 is outside [0, 1]"}},
      {"rates=nan", {"rate 1 is not finite"}},
      {"rates=0.5,inf", {"rate 2 is not finite"}},
      {"rates=0.9,0.5,0.6", {"'rates=0.9,0.5,0.6'", "rate 3 = 0.6 is above rate 2 = 0.5", "unconditional", "non-increasing"}},
      {"rates=0.5,0.9", {"rate 2 = 0.9 is above rate 1 = 0.5", "non-increasing"}},
      {"al=", {"acceptance length '' is not a number", "[1, 1e6]"}},
      {"al=x", {"acceptance length 'x' is not a number"}},
      {"al=0.5", {"'al=0.5'", "acceptance length 0.5 is below 1", "[1, 1e6]"}},
      {"al=nan", {"not finite"}},
      {"al=inf", {"not finite"}},
      {"al=2e6", {"acceptance length 2e+06 is above 1e6"}},
      {"al=3,4", {"'3,4' is not a number"}},
      {"accepted=", {"accepted count '' is not a number; expected a number in [0, 4096]"}},
      {"accepted=-1", {"'accepted=-1'", "accepted count -1 is outside [0, 4096]"}},
      {"accepted=-0.5", {"accepted count -0.5 is outside [0, 4096]"}},
      {"accepted=4097", {"accepted count 4097 is outside [0, 4096]"}},
      {"accepted=4096.5", {"accepted count 4096.5 is outside [0, 4096]"}},
      {"accepted=abc", {"accepted count 'abc' is not a number", "bonus excluded"}},
      {"accepted=1,5", {"'1,5' is not a number"}},
      {"accepted=nan", {"accepted count is not finite", "[0, 4096]"}},
      {"accepted=inf", {"accepted count is not finite"}},
      {"accepted=99999999999", {"accepted count 99999999999 is outside [0, 4096]"}},
  };
  for (const Case& c : cases) {
    const std::string e = error_of([&] { parse_forced_acceptance(c.spec); });
    ASSERT_FALSE(e.empty()) << "'" << c.spec << "' was accepted";
    for (const std::string& f : c.fragments) EXPECT_CONTAINS(e, f) << " (spec '" << c.spec << "')";
  }
  // The JSON reader and the constructor check the same ranges.
  const auto json_error = [](const char* text) { return error_of([&] { nlohmann::json::parse(text).get<ForcedAcceptance>(); }); };
  EXPECT_CONTAINS(json_error("{}"), "no \"kind\"");
  EXPECT_CONTAINS(json_error(R"({"kind":"magic"})"), "unknown kind \"magic\"");
  EXPECT_CONTAINS(json_error(R"({"kind":"al"})"), "kind \"al\" has no \"al\"");
  EXPECT_CONTAINS(json_error(R"({"kind":"al","al":"3"})"), "not a number");
  EXPECT_CONTAINS(json_error(R"({"kind":"al","al":0})"), "below 1");
  EXPECT_CONTAINS(json_error(R"({"kind":"rates","rates":[0.5,2]})"), "rate 2 = 2 is outside [0, 1]");
  EXPECT_CONTAINS(json_error(R"({"kind":"rates","rates":[]})"), "no rates");
  EXPECT_CONTAINS(json_error(R"({"kind":"rates","rates":[0.5,0.7]})"), "rate 2 = 0.7 is above rate 1 = 0.5");
  EXPECT_CONTAINS(json_error(R"({"kind":"rates","rates":[0.5,"x"]})"), "holds \"x\", not a number");
  EXPECT_CONTAINS(json_error(R"({"kind":"accepted","accepted":"2"})"), "\"accepted\" is \"2\", not a number in [0, 4096]");
  EXPECT_CONTAINS(json_error(R"({"kind":"accepted","accepted":-0.5})"), "accepted count -0.5 is outside [0, 4096]");
  EXPECT_CONTAINS(json_error(R"({"kind":"accepted","accepted":5000})"), "accepted count 5000 is outside [0, 4096]");
  EXPECT_CONTAINS(json_error(R"({"kind":"accepted"})"), "kind \"accepted\" has no \"accepted\"");
  EXPECT_CONTAINS(json_error(R"({"kind":"accepted","accepted":2,"al":3})"), "unknown key \"al\"");
  ForcedAcceptance bad;
  bad.kind = ForcedAcceptance::Kind::rates;
  EXPECT_CONTAINS(error_of([&] { ForcedAcceptor a(bad); }), "no rates");
  bad.kind = ForcedAcceptance::Kind::accepted;
  bad.accepted = -2;
  EXPECT_CONTAINS(error_of([&] { ForcedAcceptor a(bad); }), "accepted count -2 is outside [0, 4096]");
  bad.accepted = std::nan("");
  EXPECT_CONTAINS(error_of([&] { ForcedAcceptor a(bad); }), "accepted count is not finite");
  bad.kind = ForcedAcceptance::Kind::rates;
  bad.rates = {0.3, 0.4};
  EXPECT_CONTAINS(error_of([&] { ForcedAcceptor a(bad); }), "rate 2 = 0.4 is above rate 1 = 0.3");
  bad.kind = ForcedAcceptance::Kind::acceptance_length;
  bad.acceptance_length = 0.9;
  EXPECT_CONTAINS(error_of([&] { ForcedAcceptor a(bad); }), "acceptance length 0.9 is below 1");
}

}  // namespace
}  // namespace specdec
