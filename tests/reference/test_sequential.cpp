// Sequential decoding: the incremental (cached) loop equals recomputing the whole sequence each
// step; stops at EOS and max_new_tokens; sampling is a pure function of the seed and position.
#include <gtest/gtest.h>

#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/sampling/counter_rng.hpp"
#include "model_fixtures.hpp"

namespace specdec {
namespace {

constexpr uint64_t kSeed = 77;
const std::vector<int32_t> kPrompt = {5, 17, 42, 8, 63};

std::vector<int32_t> greedy_by_recompute(const Transformer& model, std::vector<int32_t> seq, int n) {
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) {
    auto cache = model.new_cache(static_cast<int>(seq.size()));
    ForwardRequest r;
    r.tokens = seq;
    r.logit_rows = {static_cast<int>(seq.size()) - 1};
    Matrix logits = model.forward(*cache, r).logits;
    const int32_t t = argmax(logits.data(), static_cast<int>(logits.cols()));
    out.push_back(t);
    seq.push_back(t);
  }
  return out;
}

TEST(Sequential, GreedyEqualsFullRecompute) {
  for (const auto& [name, cfg0] : testing::fixture_configs()) {
    ModelConfig cfg = cfg0;
    cfg.eos_token_ids.clear();
    Transformer model = testing::make_model(cfg, kSeed);
    GenerationOptions opt;
    opt.max_new_tokens = 12;
    SamplingParams greedy;
    const GenerationResult r = decode_sequential(model, kPrompt, greedy, opt);
    EXPECT_EQ(r.tokens, greedy_by_recompute(model, kPrompt, 12)) << name << ", seed " << kSeed;
    EXPECT_EQ(r.stop_reason, "max_tokens");
    EXPECT_EQ(r.stats.target_forwards, 12);  // prefill + 11: the last token needs no forward
    EXPECT_EQ(r.stats.steps, 11) << name;    // each decode forward is a step of one token
    EXPECT_EQ(r.stats.acceptance_length(), 1.0) << name;
  }
}

TEST(Sequential, StopsAtEos) {
  ModelConfig cfg = testing::tiny_llama();
  cfg.eos_token_ids.clear();
  Transformer probe = testing::make_model(cfg, kSeed);
  GenerationOptions opt;
  opt.max_new_tokens = 10;
  const auto free_run = decode_sequential(probe, kPrompt, SamplingParams{}, opt).tokens;
  cfg.eos_token_ids = {free_run[3]};
  Transformer model = testing::make_model(cfg, kSeed);
  const GenerationResult r = decode_sequential(model, kPrompt, SamplingParams{}, opt);
  // Stops at the first occurrence of the EOS token, which is included in the output.
  size_t first = 0;
  while (free_run[first] != free_run[3]) ++first;
  EXPECT_EQ(r.tokens, std::vector<int32_t>(free_run.begin(), free_run.begin() + first + 1));
  EXPECT_EQ(r.stop_reason, "eos");
  opt.stop_at_eos = false;
  EXPECT_EQ(decode_sequential(model, kPrompt, SamplingParams{}, opt).tokens, free_run);
}

TEST(Sequential, ZeroNewTokensAndEmptyPrompt) {
  Transformer model = testing::make_model(testing::tiny_llama(), kSeed);
  GenerationOptions opt;
  opt.max_new_tokens = 0;
  EXPECT_TRUE(decode_sequential(model, kPrompt, SamplingParams{}, opt).tokens.empty());
  EXPECT_THROW(decode_sequential(model, {}, SamplingParams{}, opt), Error);
}

TEST(Sequential, CoupledSamplingIsGumbelArgmaxAtEachPosition) {
  ModelConfig cfg = testing::tiny_llama();
  cfg.eos_token_ids.clear();
  Transformer model = testing::make_model(cfg, kSeed);
  SamplingParams p;
  p.mode = SamplingParams::Mode::coupled;
  p.temperature = 0.7;
  p.seed = 99;
  GenerationOptions opt;
  opt.max_new_tokens = 8;
  const auto out = decode_sequential(model, kPrompt, p, opt).tokens;
  std::vector<int32_t> seq = kPrompt;
  for (size_t i = 0; i < out.size(); ++i) {
    auto cache = model.new_cache(static_cast<int>(seq.size()));
    ForwardRequest r;
    r.tokens = seq;
    r.logit_rows = {static_cast<int>(seq.size()) - 1};
    Matrix logits = model.forward(*cache, r).logits;
    int best = -1;
    double best_score = 0;
    for (int v = 0; v < cfg.vocab_size; ++v) {
      const double s = logits(0, v) / p.temperature + gumbel(p.seed, 0, static_cast<uint32_t>(seq.size()), v);
      if (best < 0 || s > best_score) best = v, best_score = s;
    }
    EXPECT_EQ(out[i], best) << "step " << i << ", seed " << p.seed;
    seq.push_back(out[i]);
  }
}

TEST(Sequential, SamplingDependsOnlyOnSeed) {
  ModelConfig cfg = testing::tiny_llama();
  cfg.eos_token_ids.clear();
  Transformer model = testing::make_model(cfg, kSeed);
  SamplingParams p;
  p.mode = SamplingParams::Mode::sample;
  p.temperature = 1.0;
  GenerationOptions opt;
  opt.max_new_tokens = 16;
  p.seed = 1;
  const auto a = decode_sequential(model, kPrompt, p, opt).tokens;
  EXPECT_EQ(a, decode_sequential(model, kPrompt, p, opt).tokens);
  p.seed = 2;
  EXPECT_NE(a, decode_sequential(model, kPrompt, p, opt).tokens) << "16 sampled tokens identical for seeds 1 and 2";
}

}  // namespace
}  // namespace specdec
