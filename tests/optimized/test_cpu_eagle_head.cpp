// EAGLE-1, EAGLE-3 and P-EAGLE heads on the cpu backend: bitwise equal to the reference head
// (logits, hidden states, KV cache) for every head config of eagle_head_cases.hpp, with weights
// held in fp32 and rounded to BF16 and F16 (packed in two bytes then), over chains, projected
// rows, tree masks at explicit positions, P-EAGLE mask slots and selected logit rows, on 1 and 3
// threads and both code paths; and the errors of mixing caches between backends.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_eagle_head.hpp"
#include "optimized/cpu/cpu_transformer.hpp"
#include "optimized/cpu/packed_matrix.hpp"
#include "reference/core/error.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/eagle_tensors.hpp"
#include "tests/drafters/eagle_head_cases.hpp"
#include "tests/optimized/head_fixtures.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/reference/error_capture.hpp"

namespace specdec {
namespace {

using testing::bits;
using testing::cpu_cache;
using testing::dense_cache;
using testing::error_of;
using testing::expect_bitwise;
using testing::drafting_inputs;
using testing::random_input;
using testing::rounded_head;
using testing::SettingsGuard;

// On each kernel path (each instance skipped where this CPU cannot run it).
class CpuEagleHeadPaths : public testing::KernelPathTest {};
SPECDEC_INSTANTIATE_KERNEL_PATHS(CpuEagleHeadPaths);

TEST_P(CpuEagleHeadPaths, EqualsReferenceBitwiseForEveryHeadPrecisionAndThreadCount) {
  ops::set_parallel_work_threshold(0);  // thread every loop, however small
  for (const testing::Case& k : testing::cases()) {
    for (Dtype p : testing::cpu_precisions()) {
      const EagleHead reference = rounded_head(k, p);
      const EagleHead cpu_head = cpu::cpu_eagle_head(reference);
      const std::vector<EagleHead::Input> steps = drafting_inputs(reference, k.seed + 10);
      auto ref_cache = reference.new_cache(32);
      std::vector<EagleHead::Output> want;
      for (const EagleHead::Input& in : steps) want.push_back(reference.forward(*ref_cache, in));
      for (int threads : {1, 3}) {
        ops::set_num_threads(threads);
        const std::string where = k.name + " / " + dtype_name(p) + ", threads " + std::to_string(threads) + ", " +
                                  path() + ", seed " + std::to_string(k.seed);
        auto cache = cpu_head.new_cache(32);
        for (std::size_t s = 0; s < steps.size(); ++s) {
          const EagleHead::Output got = cpu_head.forward(*cache, steps[s]);
          expect_bitwise(want[s].logits, got.logits, where + ", step " + std::to_string(s) + " logits");
          expect_bitwise(want[s].hidden, got.hidden, where + ", step " + std::to_string(s) + " hidden");
        }
        EXPECT_TRUE(cpu_cache(*cache).equals(dense_cache(*ref_cache))) << where << ": KV cache";
      }
    }
  }
}

// A head moved onto the cpu target (the runtime's binding) holds one copy of its weights and reads
// the target's packed embeddings and LM head: for every head config and stored precision, with a
// target of its config alone, it computes bitwise what the reference head does.
TEST_P(CpuEagleHeadPaths, AHeadMovedOntoTheCpuTargetEqualsTheReference) {
  for (const testing::Case& k : testing::cases()) {
    for (Dtype p : testing::cpu_precisions()) {
      const std::string where = k.name + " / " + dtype_name(p) + ", " + path() + ", seed " + std::to_string(k.seed);
      const EagleHead reference = rounded_head(k, p);
      const cpu::CpuTransformer target_cpu(testing::tiny_llama(), testing::target().weights(), p);
      const TargetTensors config_only(testing::target_in(p).config());
      EagleHead copy(reference.config(), reference.weights(), config_only, "copy");
      const EagleHead moved = cpu::cpu_eagle_head(std::move(copy), &target_cpu);
      ASSERT_TRUE(moved.weights_released()) << where;
      const auto [ref_cache, cache] = testing::expect_steps_bitwise(reference, moved, drafting_inputs(reference, k.seed + 20), where);
      EXPECT_TRUE(cpu_cache(*cache).equals(dense_cache(*ref_cache))) << where << ": KV cache";
    }
  }
}

TEST(CpuEagleHead, AMovedHeadKeepsItsVectorsAndRefusesWhatNeedsItsMatrices) {
  const EagleHead reference = testing::make_head(testing::find_case("eagle3_safeailab"));
  const cpu::CpuTransformer target_cpu(testing::tiny_llama(), testing::target().weights(), Dtype::F32);
  EagleHead copy = reference;  // shares the weights: release_weights copies them
  const EagleHead moved = cpu::cpu_eagle_head(std::move(copy), &target_cpu);
  const EagleWeights& w = moved.weights();
  EXPECT_EQ(w.fc.size() + w.lm_head.size() + w.layers[0].q_proj.size() + w.layers[0].down_proj.size(), 0);
  EXPECT_EQ(w.norm, reference.weights().norm);
  EXPECT_EQ(w.hidden_norm, reference.weights().hidden_norm);
  EXPECT_EQ(w.layers[0].input_layernorm, reference.weights().layers[0].input_layernorm);
  EXPECT_EQ(w.d2t, reference.weights().d2t);
  EXPECT_EQ(w.t2d, reference.weights().t2d);
  EXPECT_EQ(moved.to_target(3), reference.to_target(3));
  // The copy it was made from still computes: the shared weights were copied, not taken.
  EXPECT_GT(reference.weights().fc.size(), 0);
  const EagleHead::Input in = random_input(reference, 3, 5);
  auto ref_cache = reference.new_cache(8);
  auto cache = moved.new_cache(8);
  expect_bitwise(reference.forward(*ref_cache, in).logits, moved.forward(*cache, in).logits, "moved eagle3_safeailab");

  const std::string gone = "this head's fp32 weights were given to the engine it was bound to";
  const EagleHead on_reference = moved.with_engine(nullptr);
  auto dense = on_reference.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { on_reference.forward(*dense, in); }), "eagle head forward in the reference: " + gone);
  EXPECT_EQ(dense->length(), 0);
  EXPECT_CONTAINS(error_of([&] { eagle_head_fingerprint(moved); }), gone);
  EXPECT_CONTAINS(error_of([&] { round_head(moved, Dtype::BF16); }), "round_head: " + gone);
  EXPECT_CONTAINS(error_of([&] { cpu::cpu_eagle_head(moved); }), "cpu_eagle_head: " + gone);
  EagleHead again = moved;
  EXPECT_CONTAINS(error_of([&] { again.release_weights(); }), "already handed to an engine");
}

TEST(CpuEagleHeadErrors, AHeadWithoutTheTargetsTensorsNeedsTheCpuTarget) {
  const EagleHead reference = testing::make_head(testing::find_case("eagle1_safeailab"));
  const TargetTensors config_only(testing::target().config());
  EXPECT_FALSE(config_only.has_tensors());
  EXPECT_CONTAINS(error_of([&] { (void)config_only.embed_tokens(); }), "the target's fp32 embeddings are not loaded here");
  EXPECT_CONTAINS(error_of([&] { (void)config_only.output_head(); }), "the target's fp32 LM head is not loaded here");
  EagleHead lone(reference.config(), reference.weights(), config_only, "lone");
  EXPECT_CONTAINS(error_of([&] { cpu::cpu_eagle_head(std::move(lone), nullptr); }),
                  "bind it with the CpuTransformer computing the target");
  // A cpu target of another shape.
  ModelConfig other = testing::tiny_llama();
  other.vocab_size = 101;
  const cpu::CpuTransformer wrong(other, testing::make_model(other, 3).weights(), Dtype::F32);
  EagleHead copy(reference.config(), reference.weights(), config_only, "copy");
  EXPECT_CONTAINS(error_of([&] { cpu::cpu_eagle_head(std::move(copy), &wrong); }),
                  "the head drafts for a target of vocab 97 and hidden size 48, the cpu target given has vocab 101");
}

TEST(CpuEagleHead, SharesTheHeadAndGivesCpuCaches) {
  const EagleHead reference = testing::make_head(testing::find_case("eagle3_safeailab"));
  const EagleHead cpu_head = cpu::cpu_eagle_head(reference);
  EXPECT_EQ(reference.engine(), nullptr);
  ASSERT_NE(cpu_head.engine(), nullptr);
  EXPECT_EQ(cpu_head.engine()->name(), "cpu");
  EXPECT_EQ(&cpu_head.weights(), &reference.weights()) << "the weights are shared, not copied";
  EXPECT_TRUE(cpu_head.target() == reference.target());
  auto cache = cpu_head.new_cache(8);
  EXPECT_NE(dynamic_cast<cpu::CpuKVCache*>(cache.get()), nullptr);
  EXPECT_EQ(cache->capacity(), 8);
  // Back on the reference.
  const EagleHead again = cpu_head.with_engine(nullptr);
  EXPECT_NE(dynamic_cast<DenseKVCache*>(again.new_cache(4).get()), nullptr);
}

TEST(CpuEagleHeadErrors, CachesOfAnotherBackendOrShapeAndBadInputsLeaveTheCacheUntouched) {
  const EagleHead reference = testing::make_head(testing::find_case("eagle3_safeailab"));
  const EagleHead cpu_head = cpu::cpu_eagle_head(reference);
  const EagleHead::Input in = random_input(reference, 3, 2);
  auto ref_cache = reference.new_cache(8);
  auto cache = cpu_head.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward(*ref_cache, in); }),
                  "eagle head forward: the KV cache was not created by the cpu backend");
  EXPECT_CONTAINS(error_of([&] { reference.forward(*cache, in); }),
                  "eagle head forward: the KV cache was not created by the reference backend");
  const cpu::CpuTransformer target_cpu(testing::tiny_llama(), testing::target().weights(), Dtype::F32);
  auto target_cache = target_cpu.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward(*target_cache, in); }),
                  "the KV cache has 3 layers of width 16, the head needs 1 of width 24");
  EXPECT_EQ(ref_cache->length(), 0);
  EXPECT_EQ(target_cache->length(), 0);

  cpu_head.forward(*cache, random_input(reference, 2, 1));
  EagleHead::Input bad = in;
  bad.features.resize(3, 48);
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward(*cache, bad); }), "features are 48 wide, expected 144");
  bad = in;
  bad.tokens[1] = 97;
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward(*cache, bad); }), "token id 97 outside the vocabulary [0, 97)");
  bad = in;
  bad.positions = {1, -2, 3};
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward(*cache, bad); }), "negative position -2");
  bad = in;
  bad.mask = AttentionMask::causal(0, 3);
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward(*cache, bad); }), "attention mask is 3x3, expected 3x5");
  EXPECT_EQ(cache->length(), 2);
  auto small = cpu_head.new_cache(2);
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward(*small, in); }), "KV cache: 3 new tokens do not fit");
  EXPECT_EQ(small->length(), 0);
}

}  // namespace
}  // namespace specdec
