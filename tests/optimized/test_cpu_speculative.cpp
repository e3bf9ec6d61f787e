// Decoding on the cpu backend: greedy and coupled speculative decoding of every method (draft LM,
// EAGLE-1 chain / static tree / dynamic tree, EAGLE-3, P-EAGLE chain / tree) with a CpuTransformer
// target equals its own sequential run token for token, leaves its KV cache as a plain forward
// builds it, and feeds the drafter the hidden states a plain forward gives. Its sequential run in
// turn equals the reference's with the rounded weights.
//
// EAGLE heads run on the cpu backend too (cpu_eagle_head), bound to the reference twin for the
// target's embeddings and LM head; the decoding loop hands them the cpu target's hidden states.
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <memory>

#include "optimized/cpu/cpu_eagle_head.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/drafting/eagle_pair_cache.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/reference/eagle_fixtures.hpp"
#include "tests/reference/speculative_fixtures.hpp"

namespace specdec {
namespace {

using testing::CpuTwin;

const auto& kPrompts = testing::kExactnessPrompts;
constexpr uint64_t kModelSeed = testing::kExactnessModelSeed;
constexpr int kNewTokens = testing::kExactnessNewTokens;
constexpr int kCapacity = testing::kExactnessCapacity;

// Targets: GQA untied and MHA tied, each in a different storage precision.
struct Target {
  std::string name;
  ModelConfig config;
  Dtype precision;
};
std::vector<Target> targets() {
  auto all = testing::fixture_configs();
  std::vector<Target> out = {{all[0].name, all[0].config, Dtype::BF16},
                             {all[1].name, all[1].config, Dtype::F16},
                             {all[0].name, all[0].config, Dtype::F32}};
  for (auto& t : out) t.config.eos_token_ids.clear();
  return out;
}

std::vector<SamplingParams> sampling_modes() {
  std::vector<SamplingParams> modes = {SamplingParams{}};
  for (double t : {0.7, 1.0}) {
    SamplingParams s;
    s.mode = SamplingParams::Mode::coupled;
    s.temperature = t;
    s.seed = 31337;
    modes.push_back(s);
  }
  return modes;
}

std::string mode_name(const SamplingParams& s) {
  return s.mode == SamplingParams::Mode::greedy ? "greedy" : "coupled T=" + std::to_string(s.temperature);
}

// The target's cache after decoding holds what one plain forward over the same tokens builds.
void expect_plain_cache(const cpu::CpuTransformer& target, const KVCache& cache, const std::vector<int32_t>& prompt,
                        const std::vector<int32_t>& tokens, const std::string& where) {
  std::vector<int32_t> seq = prompt;
  seq.insert(seq.end(), tokens.begin(), tokens.end() - 1);
  auto plain = target.new_cache(kCapacity);
  target.forward(*plain, ForwardRequest::chain(seq));
  EXPECT_TRUE(testing::cpu_cache(cache).equals(testing::cpu_cache(*plain))) << "target cache differs; " << where;
}

TEST(CpuDecoding, SequentialEqualsReferenceSequential) {
  for (const Target& t : targets()) {
    const auto twin = testing::make_twin(t.config, kModelSeed, t.precision);
    for (const SamplingParams& s : sampling_modes()) {
      for (std::size_t pi = 0; pi < kPrompts.size(); ++pi) {
        EXPECT_EQ(decode_sequential(twin->cpu, kPrompts[pi], s, testing::max_new_tokens(kNewTokens)).tokens,
                  decode_sequential(twin->reference, kPrompts[pi], s, testing::max_new_tokens(kNewTokens)).tokens)
            << mode_name(s) << ", " << t.name << " " << dtype_name(t.precision) << ", prompt #" << pi;
      }
    }
  }
}

// --- draft-model speculation, the drafter on the cpu backend too --------------------------------

TEST(CpuDecoding, DraftModelSpeculationEqualsSequential) {
  for (const Target& t : targets()) {
    const auto twin = testing::make_twin(t.config, kModelSeed, t.precision);
    const cpu::CpuTransformer& target = twin->cpu;
    ModelConfig small = t.config;
    small.num_hidden_layers = 1;
    small.intermediate_size = 32;
    std::vector<std::pair<std::string, std::unique_ptr<cpu::CpuTransformer>>> drafters;
    const LlamaWeights w = testing::make_model(t.config, kModelSeed).weights();
    drafters.emplace_back("draft_self", std::make_unique<cpu::CpuTransformer>(t.config, w, t.precision));
    drafters.emplace_back("draft_perturbed", std::make_unique<cpu::CpuTransformer>(
                                                 t.config, testing::perturbed_copy(twin->reference, 0.03f, 999).weights(),
                                                 t.precision));
    drafters.emplace_back("draft_independent", std::make_unique<cpu::CpuTransformer>(
                                                   small, testing::make_model(small, 4242).weights(), t.precision));
    for (const SamplingParams& s : sampling_modes()) {
      for (std::size_t pi = 0; pi < kPrompts.size(); ++pi) {
        const auto expected = decode_sequential(target, kPrompts[pi], s, testing::max_new_tokens(kNewTokens)).tokens;
        for (const auto& [name, drafter] : drafters) {
          for (int k = 1; k <= 8; ++k) {
            const std::string where = mode_name(s) + ": " + name + ", target " + t.name + " " + dtype_name(t.precision) +
                                      ", K " + std::to_string(k) + ", prompt #" + std::to_string(pi) + ", seed " +
                                      std::to_string(s.seed);
            DraftModelProposer proposer(*drafter, t.config, k, 64);
            const auto acceptor = default_acceptor(s);
            auto cache = target.new_cache(kCapacity);
            const GenerationResult r =
                decode_speculative(target, *cache, proposer, *acceptor, kPrompts[pi], s, testing::max_new_tokens(kNewTokens));
            ASSERT_EQ(r.tokens, expected) << where;
            expect_plain_cache(target, *cache, kPrompts[pi], r.tokens, where);
            if (name == "draft_self" && s.mode == SamplingParams::Mode::greedy) {
              EXPECT_GT(r.stats.acceptance_length(), 1.0 + 0.5 * k) << "self-drafting should accept nearly all; " << where;
            }
          }
        }
      }
    }
  }
}

// --- EAGLE-1 / EAGLE-3 / P-EAGLE: the methods and heads of eagle_fixtures.hpp --------------------

void expect_eagle_methods_match_sequential(const SamplingParams& sampling) {
  const std::string mode = mode_name(sampling);
  for (const Target& tg : targets()) {
    const auto plain = testing::make_twin(tg.config, kModelSeed, tg.precision);
    const auto bigram =
        std::make_unique<CpuTwin>(tg.config, testing::bigram_like_weights(tg.config, kModelSeed), tg.precision);
    std::map<std::pair<int, std::size_t>, std::vector<int32_t>> expected;  // (target kind, prompt)
    for (int tk = 0; tk < 2; ++tk)
      for (std::size_t pi = 0; pi < kPrompts.size(); ++pi)
        expected[{tk, pi}] = decode_sequential((tk == 0 ? plain : bigram)->cpu, kPrompts[pi], sampling, testing::max_new_tokens(kNewTokens)).tokens;
    std::map<std::string, std::pair<double, int>> acceptance;  // method -> (sum of AL, runs)
    testing::HeadPool pool;
    pool.bind = [](const EagleHead& h) { return cpu::cpu_eagle_head(h); };  // the heads run on the cpu backend too
    for (const testing::EagleMethod& m : testing::eagle_methods(pool)) {
      const int tk = m.target == testing::EagleTarget::plain ? 0 : 1;
      const CpuTwin& twin = tk == 0 ? *plain : *bigram;
      for (int k = 1; k <= (m.uses_k ? 8 : 1); ++k) {
        for (std::size_t pi = 0; pi < kPrompts.size(); ++pi) {
          const std::string where = mode + ": method " + m.name + ", target " + tg.name + " " + dtype_name(tg.precision) +
                                    ", K " + std::to_string(k) + ", prompt #" + std::to_string(pi) + ", seed " +
                                    std::to_string(sampling.seed);
          auto proposer = m.make(twin.reference, k);
          const auto acceptor = default_acceptor(sampling);
          auto cache = twin.cpu.new_cache(kCapacity);
          const GenerationResult r =
              decode_speculative(twin.cpu, *cache, *proposer, *acceptor, kPrompts[pi], sampling, testing::max_new_tokens(kNewTokens));
          ASSERT_EQ(r.tokens, (expected[{tk, pi}])) << where;
          if (!m.uses_k || k == 8) {
            acceptance[m.name].first += r.stats.acceptance_length();
            acceptance[m.name].second += 1;
          }
          expect_plain_cache(twin.cpu, *cache, kPrompts[pi], r.tokens, where);
          // The drafter cache holds exactly the committed pairs, bitwise what a fresh head builds
          // from a plain forward's hidden states.
          const EaglePairCache& pc = testing::pair_cache_of(*proposer);
          const std::vector<int32_t>& covered = pc.covered_tokens();
          ASSERT_GE(covered.size(), kPrompts[pi].size() + 1) << where;
          auto fresh = testing::fresh_pair_cache(twin.cpu, testing::head_of(*proposer), covered, kCapacity, testing::zero_first_of(*proposer));
          EXPECT_TRUE(testing::cpu_cache(pc.cache()).equals(testing::cpu_cache(*fresh)))
              << "drafter cache differs from a fresh run; " << where;
        }
      }
    }
    std::cout << "[ acceptance ] " << mode << ", " << tg.name << " " << dtype_name(tg.precision) << ":";
    for (const auto& [name, v] : acceptance) std::cout << " " << name << " " << v.first / v.second << ";";
    std::cout << "\n";
    // The passthrough head agrees with the bigram-like target often: acceptance is exercised.
    if (sampling.mode == SamplingParams::Mode::greedy) {
      for (const char* name : {"passthrough_chain", "passthrough_tree_mc_sim_7b_63", "passthrough_dynamic_7_10_60"}) {
        const auto& [sum, runs] = acceptance.at(name);
        EXPECT_GT(sum / runs, 2.0) << name << ", " << tg.name << " " << dtype_name(tg.precision);
      }
    }
  }
}

TEST(CpuDecoding, EagleMethodsGreedyEqualSequential) { expect_eagle_methods_match_sequential(SamplingParams{}); }

TEST(CpuDecoding, EagleMethodsCoupledEqualSequential) {
  for (const SamplingParams& s : sampling_modes())
    if (s.mode == SamplingParams::Mode::coupled) expect_eagle_methods_match_sequential(s);
}

}  // namespace
}  // namespace specdec
