// Decoding on the CUDA backend, on the device under test (the CPU grid emulator in the cpu tests,
// the GPU in tests/gpu): greedy and coupled speculative decoding of every method (draft LM, EAGLE-1
// / EAGLE-3 chain, static tree, dynamic tree, P-EAGLE chain and tree; chains for K = 1..8) with the
// target, the draft LM and the EAGLE heads all on the device equals the device's own sequential run
// token for token, and leaves the target's and the drafter's KV caches on the device as plain
// forwards build them. The device's sequential run equals the reference's with the rounded weights.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "optimized/cuda/cuda_eagle_head.hpp"
#include "optimized/cuda/cuda_kv_cache.hpp"
#include "optimized/cuda/cuda_transformer.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafting/draft_model_proposer.hpp"
#include "reference/drafting/eagle_pair_cache.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/optimized/device_under_test.hpp"
#include "tests/reference/eagle_fixtures.hpp"
#include "tests/reference/speculative_fixtures.hpp"

namespace specdec {
namespace {

class CudaDecoding : public testing::DeviceTest {};

const std::vector<int32_t>& kPrompt = testing::kExactnessPrompts[0];
constexpr uint64_t kModelSeed = testing::kExactnessModelSeed;
constexpr int kNewTokens = 12;  // fewer than the cpu backend's tests: the emulator is slow
constexpr int kCapacity = testing::kExactnessCapacity;
constexpr Dtype kPrecision = Dtype::BF16;

const cuda::CudaKVCache& on_device(const KVCache& c) { return dynamic_cast<const cuda::CudaKVCache&>(c); }

// A target on the device and its reference twin (the same weights rounded to kPrecision).
struct DeviceTwin {
  DeviceTwin(std::shared_ptr<cuda::DeviceRuntime> rt, const ModelConfig& c, const LlamaWeights& w)
      : reference(c, cpu::rounded_llama_weights(w, kPrecision)), device(std::move(rt), c, w, kPrecision) {}
  Transformer reference;
  cuda::CudaTransformer device;
};

ModelConfig target_config() {
  ModelConfig c = testing::fixture_configs()[0].config;  // GQA, untied head
  c.eos_token_ids.clear();
  return c;
}

std::vector<SamplingParams> modes() {
  SamplingParams coupled;
  coupled.mode = SamplingParams::Mode::coupled;
  coupled.temperature = 0.7;
  coupled.seed = 31337;
  return {SamplingParams{}, coupled};
}

std::string mode_name(const SamplingParams& s) {
  return s.mode == SamplingParams::Mode::greedy ? "greedy" : "coupled T=" + std::to_string(s.temperature);
}

// The target's cache after decoding holds what one plain forward over the same tokens builds.
void expect_plain_cache(const cuda::CudaTransformer& target, const KVCache& cache, const std::vector<int32_t>& tokens,
                        const std::string& where) {
  std::vector<int32_t> seq = kPrompt;
  seq.insert(seq.end(), tokens.begin(), tokens.end() - 1);
  auto plain = target.new_cache(kCapacity);
  target.forward(*plain, ForwardRequest::chain(seq));
  EXPECT_TRUE(on_device(cache).equals(on_device(*plain))) << "target cache differs; " << where;
}

TEST_F(CudaDecoding, SequentialEqualsReferenceSequential) {
  const ModelConfig c = target_config();
  const DeviceTwin twin(testing::test_device(), c, testing::make_model(c, kModelSeed).weights());
  for (const SamplingParams& s : modes()) {
    EXPECT_EQ(decode_sequential(twin.device, kPrompt, s, testing::max_new_tokens(kNewTokens)).tokens,
              decode_sequential(twin.reference, kPrompt, s, testing::max_new_tokens(kNewTokens)).tokens)
        << mode_name(s) << ", seed " << kModelSeed;
  }
}

TEST_F(CudaDecoding, DraftModelSpeculationEqualsSequential) {
  const std::shared_ptr<cuda::DeviceRuntime> rt = testing::test_device();
  const ModelConfig c = target_config();
  const DeviceTwin twin(rt, c, testing::make_model(c, kModelSeed).weights());
  ModelConfig small = c;
  small.num_hidden_layers = 1;
  small.intermediate_size = 32;
  const cuda::CudaTransformer drafter(rt, small, testing::make_model(small, 4242).weights(), kPrecision);
  for (const SamplingParams& s : modes()) {
    const auto expected = decode_sequential(twin.device, kPrompt, s, testing::max_new_tokens(kNewTokens)).tokens;
    for (int k = 1; k <= 8; ++k) {
      const std::string where = mode_name(s) + ", K " + std::to_string(k) + ", seed " + std::to_string(s.seed);
      DraftModelProposer proposer(drafter, c, k, 64);
      const auto acceptor = default_acceptor(s);
      auto cache = twin.device.new_cache(kCapacity);
      const GenerationResult r =
          decode_speculative(twin.device, *cache, proposer, *acceptor, kPrompt, s, testing::max_new_tokens(kNewTokens));
      ASSERT_EQ(r.tokens, expected) << where;
      expect_plain_cache(twin.device, *cache, r.tokens, where);
    }
  }
}

// The methods of eagle_fixtures.hpp whose name contains `family` ("_chain", "_tree_", "_dynamic_").
void expect_eagle_methods_match_sequential(const SamplingParams& sampling, const std::string& family) {
  const std::shared_ptr<cuda::DeviceRuntime> rt = testing::test_device();
  const ModelConfig c = target_config();
  const DeviceTwin plain(rt, c, testing::make_model(c, kModelSeed).weights());
  const DeviceTwin bigram(rt, c, testing::bigram_like_weights(c, kModelSeed));
  const std::vector<int32_t> expected[2] = {
      decode_sequential(plain.device, kPrompt, sampling, testing::max_new_tokens(kNewTokens)).tokens,
      decode_sequential(bigram.device, kPrompt, sampling, testing::max_new_tokens(kNewTokens)).tokens};
  testing::HeadPool pool;
  pool.bind = [rt](const EagleHead& h) { return cuda::cuda_eagle_head(rt, h); };  // the heads on the device too
  int accepted_runs = 0;
  int runs = 0;
  for (const testing::EagleMethod& m : testing::eagle_methods(pool)) {
    if (m.name.find(family) == std::string::npos) continue;
    ++runs;
    const int tk = m.target == testing::EagleTarget::plain ? 0 : 1;
    const DeviceTwin& twin = tk == 0 ? plain : bigram;
    for (int k = 1; k <= (m.uses_k ? 8 : 1); ++k) {
      const std::string where = mode_name(sampling) + ": method " + m.name + ", K " + std::to_string(k) + ", seed " +
                                std::to_string(sampling.seed);
      auto proposer = m.make(twin.reference, k);
      const auto acceptor = default_acceptor(sampling);
      auto cache = twin.device.new_cache(kCapacity);
      const GenerationResult r =
          decode_speculative(twin.device, *cache, *proposer, *acceptor, kPrompt, sampling, testing::max_new_tokens(kNewTokens));
      ASSERT_EQ(r.tokens, expected[tk]) << where;
      if (r.stats.acceptance_length() > 1.5) ++accepted_runs;
      expect_plain_cache(twin.device, *cache, r.tokens, where);
      const EaglePairCache& pc = testing::pair_cache_of(*proposer);
      auto fresh = testing::fresh_pair_cache(twin.device, testing::head_of(*proposer), pc.covered_tokens(), kCapacity, testing::zero_first_of(*proposer));
      EXPECT_TRUE(on_device(pc.cache()).equals(on_device(*fresh))) << "drafter cache differs from a fresh run; " << where;
    }
  }
  EXPECT_GE(runs, 4) << "no method of family " << family;
  if (sampling.mode == SamplingParams::Mode::greedy) {
    EXPECT_GT(accepted_runs, 0) << family << ": the passthrough heads should accept often: acceptance is exercised";
  }
}

// One test per family and mode, so they spread over the test runner's jobs.
TEST_F(CudaDecoding, EagleChainsGreedyEqualSequential) { expect_eagle_methods_match_sequential(modes()[0], "_chain"); }
TEST_F(CudaDecoding, EagleChainsCoupledEqualSequential) { expect_eagle_methods_match_sequential(modes()[1], "_chain"); }
TEST_F(CudaDecoding, EagleStaticTreesGreedyEqualSequential) { expect_eagle_methods_match_sequential(modes()[0], "_tree_"); }
TEST_F(CudaDecoding, EagleStaticTreesCoupledEqualSequential) { expect_eagle_methods_match_sequential(modes()[1], "_tree_"); }
TEST_F(CudaDecoding, EagleDynamicTreesGreedyEqualSequential) { expect_eagle_methods_match_sequential(modes()[0], "_dynamic_"); }
TEST_F(CudaDecoding, EagleDynamicTreesCoupledEqualSequential) { expect_eagle_methods_match_sequential(modes()[1], "_dynamic_"); }

}  // namespace
}  // namespace specdec
