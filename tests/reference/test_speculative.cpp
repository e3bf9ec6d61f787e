// Speculative decoding in the reference: greedy and coupled exactness against sequential
// decoding for every drafter, K = 1..8; cache exactness; statistics; a custom acceptor; and a
// goodness-of-fit test of the whole sampling loop.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "speculative_fixtures.hpp"

namespace specdec {
namespace {

using testing::DrafterPool;
using testing::MethodFixture;

const auto& kPrompts = testing::kExactnessPrompts;
constexpr uint64_t kModelSeed = testing::kExactnessModelSeed;


void expect_matches_sequential(const SamplingParams& sampling, const std::string& mode) {
  for (const auto& [cfg_name, cfg] : testing::speculative_targets()) {
    const Transformer target = testing::make_model(cfg, kModelSeed);
    DrafterPool pool;
    for (const MethodFixture& m : testing::draft_model_fixtures(pool)) {
      for (int k = 1; k <= 8; ++k) {
        for (size_t pi = 0; pi < kPrompts.size(); ++pi) {
          const auto expected = decode_sequential(target, kPrompts[pi], sampling, testing::max_new_tokens(20)).tokens;
          auto proposer = m.make(target, k);
          const auto acceptor = default_acceptor(sampling);
          auto cache = target.new_cache(64);
          const GenerationResult r = decode_speculative(target, *cache, *proposer, *acceptor, kPrompts[pi], sampling, testing::max_new_tokens(20));
          ASSERT_EQ(r.tokens, expected) << mode << ": method " << m.name << ", target " << cfg_name << ", K " << k
                                        << ", prompt #" << pi << ", seed " << sampling.seed;
          // Cache exactness: the target cache is what one plain forward over the same tokens builds.
          std::vector<int32_t> seq = kPrompts[pi];
          seq.insert(seq.end(), r.tokens.begin(), r.tokens.end() - 1);
          auto plain = target.new_cache(64);
          target.forward(*plain, ForwardRequest::chain(seq));
          EXPECT_TRUE(testing::dense_cache(*cache).equals(testing::dense_cache(*plain)))
              << mode << ": target cache differs, method " << m.name << ", K " << k << ", prompt #" << pi;
        }
      }
    }
  }
}

TEST(Speculative, GreedyEqualsSequentialForEveryDrafterAndK) { expect_matches_sequential(SamplingParams{}, "greedy"); }

TEST(Speculative, CoupledSamplingEqualsSequential) {
  for (double t : {0.7, 1.0}) {
    SamplingParams s;
    s.mode = SamplingParams::Mode::coupled;
    s.temperature = t;
    s.seed = 31337;
    expect_matches_sequential(s, "coupled T=" + std::to_string(t));
  }
}

TEST(Speculative, SelfDraftAcceptsEverythingAndCountsIt) {
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  DrafterPool pool;
  const int k = 4;
  auto proposer = testing::draft_model_fixtures(pool)[0].make(target, k);
  MatchAcceptor acceptor;
  const GenerationResult r = decode_speculative(target, *proposer, acceptor, kPrompts[0], SamplingParams{}, testing::max_new_tokens(21));
  // 1 token from the prefill, then 4 steps of K + 1 = 5 tokens.
  EXPECT_EQ(r.stats.steps, 4);
  EXPECT_DOUBLE_EQ(r.stats.acceptance_length(), 5.0);
  EXPECT_EQ(r.stats.accepted_tokens, 16);
  EXPECT_EQ(r.stats.drafted_tokens, 16);
  EXPECT_EQ(r.stats.target_forwards, 5);
  EXPECT_EQ(r.stats.acceptance_by_depth(), std::vector<double>(4, 1.0));
  // The draft cache holds exactly what a plain run of the draft model over its tokens builds.
  const auto& dp = dynamic_cast<const DraftModelProposer&>(*proposer);
  auto plain = pool.models.back()->new_cache(256);
  pool.models.back()->forward(*plain, ForwardRequest::chain(dp.cached_tokens()));
  EXPECT_TRUE(dynamic_cast<const DenseKVCache&>(dp.cache()).equals(testing::dense_cache(*plain)));
}

// A user-supplied acceptor is what decides: one that rejects every draft still reproduces
// sequential greedy decoding, with acceptance length exactly 1.
class RejectAll final : public TokenAcceptor {
 public:
  std::string name() const override { return "reject-all"; }
  VerifyResult verify(const VerifyInput& in) const override {
    VerifyResult r;
    r.emitted = {argmax(in.target_logits->data(), static_cast<int>(in.target_logits->cols()))};
    for (int c : in.tree->children(-1)) {
      r.decisions.push_back(0);
      r.decision_nodes.push_back(c);
    }
    return r;
  }
};

TEST(Speculative, CustomAcceptorIsUsed) {
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  DrafterPool pool;
  auto proposer = testing::draft_model_fixtures(pool)[0].make(target, 3);  // would accept everything
  RejectAll acceptor;
  const GenerationResult r = decode_speculative(target, *proposer, acceptor, kPrompts[0], SamplingParams{}, testing::max_new_tokens(12));
  EXPECT_EQ(r.tokens, decode_sequential(target, kPrompts[0], SamplingParams{}, testing::max_new_tokens(12)).tokens);
  EXPECT_DOUBLE_EQ(r.stats.acceptance_length(), 1.0);
  EXPECT_EQ(r.stats.accepted_tokens, 0);
}

// Counts the forwards that asked for logit rows and the ones that asked only for their argmax.
class CountingModel final : public LanguageModel {
 public:
  explicit CountingModel(const LanguageModel& inner) : inner_(inner) {}
  const ModelConfig& config() const override { return inner_.config(); }
  std::unique_ptr<KVCache> new_cache(int capacity) const override { return inner_.new_cache(capacity); }
  ForwardResult forward(KVCache& cache, const ForwardRequest& request) const override {
    if (!request.logit_rows.empty()) ++(request.argmax_only ? argmax_only : rows);
    return inner_.forward(cache, request);
  }
  mutable int argmax_only = 0, rows = 0;

 private:
  const LanguageModel& inner_;
};

TEST(Speculative, GreedyWithoutAnObserverAsksTheTargetOnlyForItsArgmax) {
  // A backend may then pick the tokens where the logits are; the tokens are the same either way.
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer model = testing::make_model(cfg, kModelSeed);
  DrafterPool pool;
  DecodeObserver watching;  // any observer sees the logits, so every forward returns them
  SamplingParams coupled;
  coupled.mode = SamplingParams::Mode::coupled;
  coupled.temperature = 0.8;
  for (DecodeObserver* observer : {static_cast<DecodeObserver*>(nullptr), &watching}) {
    for (const SamplingParams& s : {SamplingParams{}, coupled}) {
      const std::string where = std::string(observer ? "observed, " : "unobserved, ") + to_string(s.mode);
      const CountingModel target(model);
      const auto want = decode_sequential(model, kPrompts[0], s, testing::max_new_tokens(12), &watching).tokens;
      EXPECT_EQ(decode_sequential(target, kPrompts[0], s, testing::max_new_tokens(12), observer).tokens, want) << where;
      auto proposer = testing::draft_model_fixtures(pool)[0].make(model, 3);
      const auto acceptor = default_acceptor(s);
      auto cache = target.new_cache(128);
      EXPECT_EQ(decode_speculative(target, *cache, *proposer, *acceptor, kPrompts[0], s, testing::max_new_tokens(12),
                                   observer)
                    .tokens,
                want)
          << where;
      const bool picks = !observer && s.mode == SamplingParams::Mode::greedy;
      EXPECT_EQ(target.argmax_only > 0, picks) << where;
      EXPECT_EQ(target.rows > 0, !picks) << where;
    }
  }
}

TEST(Speculative, StopsAtEosInsideAStep) {
  auto cfg = testing::speculative_targets()[0].config;
  const Transformer probe = testing::make_model(cfg, kModelSeed);
  const auto free_run = decode_sequential(probe, kPrompts[0], SamplingParams{}, testing::max_new_tokens(15)).tokens;
  cfg.eos_token_ids = {free_run[6]};
  const Transformer target = testing::make_model(cfg, kModelSeed);
  DrafterPool pool;
  auto proposer = testing::draft_model_fixtures(pool)[0].make(target, 4);
  MatchAcceptor acceptor;
  const GenerationResult r = decode_speculative(target, *proposer, acceptor, kPrompts[0], SamplingParams{}, testing::max_new_tokens(15));
  EXPECT_EQ(r.tokens, decode_sequential(target, kPrompts[0], SamplingParams{}, testing::max_new_tokens(15)).tokens);
  EXPECT_EQ(r.stop_reason, "eos");
}

TEST(Speculative, RejectsBadDrafters) {
  const auto cfg = testing::speculative_targets()[0].config;
  const Transformer target = testing::make_model(cfg, kModelSeed);
  ModelConfig other = cfg;
  other.vocab_size = cfg.vocab_size + 1;
  const Transformer wrong_vocab = testing::make_model(other, 1);
  try {
    DraftModelProposer p(wrong_vocab, cfg, 4, 64);
    ADD_FAILURE() << "a draft model with another vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocabulary"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DraftModelProposer(target, cfg, 0, 64), Error);
}

// Goodness of fit of the whole sampling loop (draft sampling, rejection, residual and bonus
// draws, cache handling) against the target's exact distribution.
//
// Statistic: Pearson chi-square over the joint distribution of the first three generated tokens,
// bins with expected count < 5 merged into one. Sample: N = 6000 independent runs (seeds
// 1..N). Significance: alpha = 1e-3 (critical value from the Wilson–Hilferty approximation).
// Power: against any alternative at total-variation distance delta from the target, the
// noncentrality is at least 4·N·delta² (chi-square distance >= 4·TV²); for delta = 0.06 that is
// 86, which for the ~20–40 degrees of freedom here gives power above 0.95.
TEST(Speculative, SamplingLoopMatchesTargetDistribution) {
  const testing::SampledLoopSetup setup;
  const ModelConfig& cfg = setup.config;
  const Transformer& target = setup.target;
  const Transformer& drafter = setup.drafter;
  const std::vector<int32_t>& prompt = setup.prompt;
  SamplingParams s = setup.sampling;

  const auto expected = testing::three_token_distribution(target, prompt, s);
  const int N = 6000;
  std::map<std::vector<int32_t>, int> counts;
  for (int i = 1; i <= N; ++i) {
    s.seed = static_cast<uint64_t>(i);
    DraftModelProposer proposer(drafter, cfg, 2, 16);
    RejectionAcceptor acceptor;
    counts[decode_speculative(target, proposer, acceptor, prompt, s, testing::max_new_tokens(3)).tokens]++;
  }
  const testing::ChiSquare chi = testing::chi_square_test(expected, counts, N);
  EXPECT_LT(chi.statistic, chi.critical) << "chi-square " << chi.statistic << " with " << chi.degrees_of_freedom
                                         << " degrees of freedom, N " << N;
  EXPECT_GT(chi.bins, 10);
}

}  // namespace
}  // namespace specdec
