#pragma once
// Targets and drafters for the speculative-decoding tests. A drafter that never agrees with its
// target would make every exactness test trivially pass (everything rejected), so the fixtures
// include drafters that agree often but not always: a perturbed copy of the target, and the
// target itself (everything accepted).
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "reference/decoding/generation.hpp"
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/sampling/sampler.hpp"
#include "model_fixtures.hpp"

namespace specdec::testing {

// The exactness runs of the speculative methods, on the reference and on the cpu backend:
// prompts, the target's seed, tokens per run, and cache capacity (prompt + new tokens + the
// largest tree + 1).
inline const std::vector<std::vector<int32_t>> kExactnessPrompts = {{3, 14, 15, 92}, {65}, {2, 7, 1, 8, 28, 18, 28}};
constexpr uint64_t kExactnessModelSeed = 2024;
constexpr int kExactnessNewTokens = 20;
constexpr int kExactnessCapacity = 160;

// The target's weights plus Gaussian noise of the given size (same config).
inline Transformer perturbed_copy(const Transformer& target, float noise, uint64_t seed) {
  LlamaWeights w = target.weights();
  const LlamaWeights n = random_llama_weights(target.config(), seed, noise);
  auto add = [](Matrix& a, const Matrix& b) { if (a.size() && a.size() == b.size()) a += b; };
  add(w.embed_tokens, n.embed_tokens);
  for (size_t l = 0; l < w.layers.size(); ++l) {
    add(w.layers[l].q_proj, n.layers[l].q_proj);
    add(w.layers[l].k_proj, n.layers[l].k_proj);
    add(w.layers[l].v_proj, n.layers[l].v_proj);
    add(w.layers[l].o_proj, n.layers[l].o_proj);
    add(w.layers[l].gate_proj, n.layers[l].gate_proj);
    add(w.layers[l].down_proj, n.layers[l].down_proj);
  }
  add(w.lm_head, n.lm_head);
  return Transformer(target.config(), w);
}

struct MethodFixture {
  std::string name;
  // Builds a proposer drafting K tokens for `target` (which outlives it).
  std::function<std::unique_ptr<Proposer>(const Transformer& target, int k)> make;
};

// Keeps drafter models alive for the duration of a test.
struct DrafterPool {
  std::vector<std::unique_ptr<Transformer>> models;
  const Transformer& add(Transformer t) {
    models.push_back(std::make_unique<Transformer>(std::move(t)));
    return *models.back();
  }
};

inline std::vector<MethodFixture> draft_model_fixtures(DrafterPool& pool) {
  return {
      {"draft_self",
       [&pool](const Transformer& target, int k) -> std::unique_ptr<Proposer> {
         return std::make_unique<DraftModelProposer>(pool.add(Transformer(target.config(), target.weights())), target.config(), k, 256);
       }},
      {"draft_perturbed",
       [&pool](const Transformer& target, int k) -> std::unique_ptr<Proposer> {
         return std::make_unique<DraftModelProposer>(pool.add(perturbed_copy(target, 0.03f, 999)), target.config(), k, 256);
       }},
      {"draft_independent",
       [&pool](const Transformer& target, int k) -> std::unique_ptr<Proposer> {
         ModelConfig small = target.config();
         small.num_hidden_layers = 1;
         small.intermediate_size = 32;
         return std::make_unique<DraftModelProposer>(pool.add(make_model(small, 4242)), target.config(), k, 256);
       }},
  };
}

// Exact joint distribution of the next three tokens after `prompt` under `sampling`, by
// enumerating every continuation (for tiny vocabularies).
inline std::map<std::vector<int32_t>, double> three_token_distribution(const Transformer& target,
                                                                       const std::vector<int32_t>& prompt,
                                                                       const SamplingParams& sampling) {
  const int V = target.config().vocab_size;
  auto probs_after = [&](const std::vector<int32_t>& seq) {
    auto cache = target.new_cache(static_cast<int>(seq.size()));
    ForwardRequest r;
    r.tokens = seq;
    r.logit_rows = {static_cast<int>(seq.size()) - 1};
    const Matrix l = target.forward(*cache, r).logits;
    return probabilities(l.data(), V, sampling);
  };
  std::map<std::vector<int32_t>, double> expected;
  const auto p1 = probs_after(prompt);
  for (int a = 0; a < V; ++a) {
    std::vector<int32_t> pa = prompt;
    pa.push_back(a);
    const auto p2 = probs_after(pa);
    for (int b = 0; b < V; ++b) {
      std::vector<int32_t> pb = pa;
      pb.push_back(b);
      const auto p3 = probs_after(pb);
      for (int c = 0; c < V; ++c) expected[{a, b, c}] = p1[a] * p2[b] * p3[c];
    }
  }
  return expected;
}

// The sampling-loop goodness-of-fit setting (test_speculative, test_policies): a 6-token target
// (model seed 7), a drafter 0.25 away (seed 8), prompt {1, 4}, sampling at temperature 1.
struct SampledLoopSetup {
  ModelConfig config = [] {
    ModelConfig c = tiny_llama(6);
    c.eos_token_ids.clear();
    return c;
  }();
  Transformer target = make_model(config, 7);
  Transformer drafter = perturbed_copy(target, 0.25f, 8);
  std::vector<int32_t> prompt = {1, 4};
  SamplingParams sampling = [] {
    SamplingParams s;
    s.mode = SamplingParams::Mode::sample;
    s.temperature = 1.0;
    return s;
  }();
};

// Pearson chi-square of observed counts (N samples) against expected probabilities, bins with
// expected count < 5 merged into one; the critical value at alpha = 1e-3 from the
// Wilson–Hilferty approximation.
struct ChiSquare {
  double statistic = 0;
  double degrees_of_freedom = 0;
  double critical = 0;
  int bins = 0;
};
inline ChiSquare chi_square_test(const std::map<std::vector<int32_t>, double>& expected,
                                 const std::map<std::vector<int32_t>, int>& counts, int n) {
  ChiSquare r;
  double small_expected = 0;
  int small_count = 0;
  for (const auto& [seq, p] : expected) {
    const double e = n * p;
    const auto it = counts.find(seq);
    const int o = it == counts.end() ? 0 : it->second;
    if (e < 5) {
      small_expected += e;
      small_count += o;
      continue;
    }
    r.statistic += (o - e) * (o - e) / e;
    ++r.bins;
  }
  if (small_expected > 0) {
    r.statistic += (small_count - small_expected) * (small_count - small_expected) / small_expected;
    ++r.bins;
  }
  const double df = r.degrees_of_freedom = r.bins - 1;
  const double z = 3.090232;  // upper 1e-3 normal quantile
  r.critical = df * std::pow(1 - 2 / (9 * df) + z * std::sqrt(2 / (9 * df)), 3);
  return r;
}

// The targets the speculative tests decode with: GQA untied and MHA tied, never stopping at EOS.
inline std::vector<NamedConfig> speculative_targets() {
  auto all = fixture_configs();
  std::vector<NamedConfig> out = {all[0], all[1]};
  for (auto& c : out) c.config.eos_token_ids.clear();
  return out;
}

inline GenerationOptions max_new_tokens(int n) {
  GenerationOptions o;
  o.max_new_tokens = n;
  return o;
}

}  // namespace specdec::testing
