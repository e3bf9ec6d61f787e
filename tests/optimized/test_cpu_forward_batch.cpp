// forward_batch on the cpu backend (CpuTransformer and the EAGLE-family head engine): for random
// compositions of 1–6 sequences under fixed named seeds (ragged token counts 1..9; chains, trees
// and shifted positions; different cache lengths; logit-row subsets, argmax_only, final and aux
// hidden states; projected rows and P-EAGLE mask slots for heads; F32 and BF16 weights; 1 and 3
// threads), each entry's results and cache afterwards are bitwise those of a forward of that entry
// alone on a fresh cache with the same prefix, and those of the reference. A bad entry (duplicate
// cache, bad token, cache of another backend or shape, overflow) throws naming the entry before any
// cache is touched.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_eagle_head.hpp"
#include "reference/core/error.hpp"
#include "tests/drafters/eagle_head_cases.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/optimized/head_fixtures.hpp"
#include "tests/reference/error_capture.hpp"

namespace specdec {
namespace {

using testing::bitwise_equal;
using testing::cpu_cache;
using testing::dense_cache;
using testing::error_of;
using testing::SettingsGuard;

// The compositions' seeds: a failure names its seed and case.
constexpr uint64_t kCompositionSeeds[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
const std::vector<Dtype> kBatchPrecisions = {Dtype::F32, Dtype::BF16};

class Rng {
 public:
  explicit Rng(uint64_t seed) : g_(seed) {}
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g_); }  // [lo, hi]
  bool chance(int percent) { return uniform(0, 99) < percent; }
  uint64_t next() { return g_(); }

 private:
  std::mt19937_64 g_;
};

// A random tree of T nodes (parents precede children) and each node's depth.
std::vector<int> random_parents(Rng& rng, int T, std::vector<int>& depth) {
  std::vector<int> parents(static_cast<std::size_t>(T));
  depth.assign(static_cast<std::size_t>(T), 0);
  for (int t = 0; t < T; ++t) {
    const int p = rng.uniform(-1, t - 1);
    parents[static_cast<std::size_t>(t)] = p;
    if (p >= 0) depth[static_cast<std::size_t>(t)] = depth[static_cast<std::size_t>(p)] + 1;
  }
  return parents;
}

// Logit rows among T: all of them, none, the last, or a few out of order with repeats.
std::vector<int> random_logit_rows(Rng& rng, int T, std::string& label) {
  std::vector<int> rows;
  switch (rng.uniform(0, 3)) {
    case 0:
      for (int t = 0; t < T; ++t) rows.push_back(t);
      label += " all-rows";
      break;
    case 1:
      label += " no-rows";
      break;
    case 2:
      rows = {T - 1};
      label += " last-row";
      break;
    default:
      for (int i = rng.uniform(1, 3); i > 0; --i) rows.push_back(rng.uniform(0, T - 1));
      label += " rows{";
      for (int r : rows) label += std::to_string(r) + ",";
      label += "}";
  }
  return rows;
}

// Tokens, positions and mask of a T-token forward after C cached tokens: a chain, a tree at its
// nodes' depths, or a chain at explicit positions past a gap.
void random_shape(Rng& rng, int T, int C, std::vector<int32_t>& positions, std::optional<AttentionMask>& mask,
                  std::string& label) {
  switch (rng.uniform(0, 2)) {
    case 0:
      label += " chain";
      break;
    case 1: {
      std::vector<int> depth;
      mask = AttentionMask::tree(C, random_parents(rng, T, depth));
      for (int d : depth) positions.push_back(C + d);
      label += " tree";
      break;
    }
    default:
      for (int t = 0; t < T; ++t) positions.push_back(C + 3 + t);
      label += " gap-positions";
  }
}

// --- the target ---------------------------------------------------------------------------------

struct TargetEntry {
  std::vector<int32_t> prefix;
  ForwardRequest request;
  std::string label;
};

TargetEntry random_target_entry(Rng& rng, const ModelConfig& c, std::size_t index) {
  TargetEntry e;
  const int C = rng.uniform(0, 10), T = rng.uniform(1, 9);
  e.prefix = testing::random_tokens(C, c.vocab_size, rng.next());
  e.label = "entry " + std::to_string(index) + " (cache " + std::to_string(C) + ", T " + std::to_string(T) + ",";
  ForwardRequest& r = e.request;
  r.tokens = testing::random_tokens(T, c.vocab_size, rng.next());
  random_shape(rng, T, C, r.positions, r.mask, e.label);
  r.logit_rows = random_logit_rows(rng, T, e.label);
  if (rng.chance(25)) {
    r.argmax_only = true;
    e.label += " argmax_only";
  }
  if (rng.chance(35)) {
    r.final_hidden = true;
    e.label += " final_hidden";
  }
  if (rng.chance(35)) {
    for (int i = rng.uniform(1, 3); i > 0; --i) r.aux_layers.push_back(rng.uniform(0, c.num_hidden_layers));
    e.label += " aux{";
    for (int a : r.aux_layers) e.label += std::to_string(a) + ",";
    e.label += "}";
  }
  e.label += ")";
  return e;
}

void expect_same_result(const ForwardResult& want, const ForwardResult& got, const std::string& where) {
  EXPECT_TRUE(bitwise_equal(got.logits, want.logits)) << where << ": logits";
  EXPECT_EQ(got.argmax, want.argmax) << where << ": argmax";
  EXPECT_TRUE(bitwise_equal(got.final_hidden, want.final_hidden)) << where << ": final hidden";
  EXPECT_TRUE(bitwise_equal(got.aux_hidden, want.aux_hidden)) << where << ": aux hidden";
}

TEST(CpuForwardBatch, EachEntryEqualsItsOwnForwardAndTheReferenceBitwise) {
  SettingsGuard guard;
  const long long default_threshold = ops::parallel_work_threshold();
  const auto configs = testing::cpu_fixture_configs();
  int composition = 0;
  for (Dtype p : kBatchPrecisions) {
    for (uint64_t seed : kCompositionSeeds) {
      const auto& [name, cfg] = configs[static_cast<std::size_t>(composition++) % configs.size()];
      // Every third composition threads every loop, the attention's rows of all entries included.
      const int threads = seed % 3 == 0 ? 3 : 1;
      ops::set_num_threads(threads);
      ops::set_parallel_work_threshold(threads > 1 ? 0 : default_threshold);
      const auto twin = testing::make_twin(cfg, seed, p);
      Rng rng(seed);
      const std::size_t B = static_cast<std::size_t>(rng.uniform(1, 6));
      std::vector<TargetEntry> entries;
      for (std::size_t i = 0; i < B; ++i) entries.push_back(random_target_entry(rng, cfg, i));
      const std::string where = "seed " + std::to_string(seed) + ", " + name + " / " + dtype_name(p) + ", " +
                                std::to_string(B) + " entries, threads " + std::to_string(threads);

      // The prefixes: as one batch here, one by one on the caches of the single forwards.
      std::vector<std::unique_ptr<KVCache>> batched, alone, reference;
      std::vector<ForwardRequest> prefixes;
      prefixes.reserve(B);
      std::vector<BatchEntry> prefill;
      for (const TargetEntry& e : entries) {
        batched.push_back(twin->cpu.new_cache(24));
        alone.push_back(twin->cpu.new_cache(24));
        reference.push_back(twin->reference.new_cache(24));
        if (e.prefix.empty()) continue;
        prefixes.push_back(ForwardRequest::chain(e.prefix));
        prefill.push_back({batched.back().get(), &prefixes.back()});
        twin->cpu.forward(*alone.back(), prefixes.back());
        twin->reference.forward(*reference.back(), prefixes.back());
      }
      twin->cpu.forward_batch(prefill);

      std::vector<BatchEntry> batch;
      for (std::size_t i = 0; i < B; ++i) batch.push_back({batched[i].get(), &entries[i].request});
      const std::vector<ForwardResult> got = twin->cpu.forward_batch(batch);
      ASSERT_EQ(got.size(), B) << where;
      for (std::size_t i = 0; i < B; ++i) {
        const std::string w = where + ", " + entries[i].label;
        expect_same_result(twin->cpu.forward(*alone[i], entries[i].request), got[i], w + ", vs its own forward");
        expect_same_result(twin->reference.forward(*reference[i], entries[i].request), got[i], w + ", vs the reference");
        EXPECT_TRUE(cpu_cache(*batched[i]).equals(cpu_cache(*alone[i]))) << w << ": KV cache vs its own forward";
        EXPECT_TRUE(cpu_cache(*batched[i]).equals(dense_cache(*reference[i]))) << w << ": KV cache vs the reference";
      }
    }
  }
}

TEST(CpuForwardBatch, EmptyBatchGivesNothing) {
  const auto twin = testing::make_twin(testing::tiny_llama(), 7, Dtype::F32);
  EXPECT_TRUE(twin->cpu.forward_batch({}).empty());
}

TEST(CpuForwardBatchErrors, ABadEntryThrowsNamingItAndLeavesEveryCacheUntouched) {
  const ModelConfig cfg = testing::tiny_llama();
  const auto twin = testing::make_twin(cfg, 7, Dtype::F32);
  const cpu::CpuTransformer& model = twin->cpu;
  // Entries 0 and 1 are good; entry 0's cache holds a prefix, entry 1's is empty.
  auto c0 = model.new_cache(8), c1 = model.new_cache(8), c2 = model.new_cache(8);
  model.forward(*c0, ForwardRequest::chain({4, 5, 6}));
  auto c0_before = model.new_cache(8);
  model.forward(*c0_before, ForwardRequest::chain({4, 5, 6}));
  const ForwardRequest good0 = ForwardRequest::chain({7, 8}), good1 = ForwardRequest::chain({9});
  auto untouched = [&](const std::string& what) {
    EXPECT_EQ(c0->length(), 3) << what;
    EXPECT_TRUE(cpu_cache(*c0).equals(cpu_cache(*c0_before))) << what;
    EXPECT_EQ(c1->length(), 0) << what;
    EXPECT_EQ(c2->length(), 0) << what;
  };

  ForwardRequest bad_token = ForwardRequest::chain({1, cfg.vocab_size});
  EXPECT_CONTAINS(error_of([&] { model.forward_batch({{c0.get(), &good0}, {c1.get(), &good1}, {c2.get(), &bad_token}}); }),
                  "forward_batch: entry 2: forward: token id 97 outside the vocabulary [0, 97)");
  untouched("bad token");

  EXPECT_CONTAINS(error_of([&] { model.forward_batch({{c0.get(), &good0}, {c1.get(), &good1}, {c0.get(), &good1}}); }),
                  "forward_batch: batch entry 2 uses a KV cache an earlier entry uses");
  untouched("duplicate cache");

  auto reference_cache = twin->reference.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { model.forward_batch({{c0.get(), &good0}, {reference_cache.get(), &good1}}); }),
                  "forward_batch: entry 1: forward: the KV cache was not created by the cpu backend");
  untouched("reference cache");
  EXPECT_EQ(reference_cache->length(), 0);

  ModelConfig other = cfg;
  other.num_hidden_layers = 2;
  const cpu::CpuTransformer other_model(other, testing::make_model(other, 7).weights());
  auto other_cache = other_model.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { model.forward_batch({{c0.get(), &good0}, {other_cache.get(), &good1}}); }),
                  "forward_batch: entry 1: forward: the KV cache has 2 layers");
  untouched("cache of another shape");

  auto small = model.new_cache(2);
  const ForwardRequest three = ForwardRequest::chain({1, 2, 3});
  EXPECT_CONTAINS(error_of([&] { model.forward_batch({{c0.get(), &good0}, {c1.get(), &good1}, {small.get(), &three}}); }),
                  "forward_batch: entry 2: KV cache: 3 new tokens do not fit");
  untouched("overflow");
  EXPECT_EQ(small->length(), 0);

  ForwardRequest bad_mask = ForwardRequest::chain({1, 2});
  bad_mask.mask = AttentionMask::causal(0, 2);  // entry 0's cache holds 3: 2x5 expected
  EXPECT_CONTAINS(error_of([&] { model.forward_batch({{c0.get(), &bad_mask}, {c1.get(), &good1}}); }),
                  "forward_batch: entry 0: forward: attention mask is 2x2, expected 2x5");
  untouched("bad mask");

  EXPECT_CONTAINS(error_of([&] { model.forward_batch({{c0.get(), &good0}, {nullptr, &good1}}); }),
                  "forward_batch: batch entry 1 has no cache");
  untouched("no cache");

  // After all that, the good entries still compute what they would have.
  const std::vector<ForwardResult> ok = model.forward_batch({{c0.get(), &good0}, {c1.get(), &good1}});
  EXPECT_TRUE(bitwise_equal(ok[0].logits, model.forward(*c0_before, good0).logits));
  EXPECT_EQ(c1->length(), 1);
}

// --- the heads ----------------------------------------------------------------------------------

struct HeadEntry {
  EagleHead::Input prefix;  // no rows when the cache starts empty
  EagleHead::Input input;
  std::string label;
};

HeadEntry random_head_entry(Rng& rng, const EagleHead& head, std::size_t index) {
  const EagleHeadConfig& c = head.config();
  const int H = c.layer.hidden_size, F = c.feature_width();
  HeadEntry e;
  const int C = rng.uniform(0, 8), T = rng.uniform(1, 9);
  if (C > 0) e.prefix = testing::random_input(head, C, rng.next());
  e.label = "entry " + std::to_string(index) + " (cache " + std::to_string(C) + ", T " + std::to_string(T) + ",";
  // P-EAGLE's parallel drafting: a real slot, then mask slots (none projected).
  const bool mask_slots = c.kind == EagleKind::peagle && T > 1 && rng.chance(40);
  std::vector<int> projected;
  if (!c.reads_final_hidden() && !mask_slots) {
    for (int t = 0; t < T; ++t)
      if (rng.chance(30)) projected.push_back(t);
  }
  EagleHead::Input& in = e.input;
  in = testing::random_input(head, T, rng.next(), projected);
  if (!projected.empty()) e.label += " " + std::to_string(projected.size()) + "-projected";
  if (!c.reads_final_hidden() && !mask_slots && F > H && rng.chance(20)) {
    // Every row fed back: H-wide features.
    in.projected.assign(static_cast<std::size_t>(T), 1);
    in.features = in.features.leftCols(H).eval();
    e.label += " all-projected-H-wide";
  }
  if (mask_slots) {
    for (int t = 1; t < T; ++t) {
      in.tokens[static_cast<std::size_t>(t)] = c.mask_token_id;
      in.features.row(t) = head.mask_hidden().transpose();
    }
    e.label += " mask-slots";
  }
  random_shape(rng, T, C, in.positions, in.mask, e.label);
  in.logit_rows = random_logit_rows(rng, T, e.label);
  e.label += ")";
  return e;
}

TEST(CpuEagleHeadBatch, EachEntryEqualsItsOwnForwardAndTheReferenceBitwise) {
  SettingsGuard guard;
  const long long default_threshold = ops::parallel_work_threshold();
  int composition = 0;
  for (const testing::Case& k : testing::cases()) {
    for (Dtype p : kBatchPrecisions) {
      const EagleHead reference = testing::rounded_head(k, p);
      const EagleHead cpu_head = cpu::cpu_eagle_head(reference);
      for (uint64_t composition_seed : kCompositionSeeds) {
        const uint64_t seed = 1000 * k.seed + composition_seed;  // a head and composition of its own
        const int threads = composition++ % 3 == 2 ? 3 : 1;
        ops::set_num_threads(threads);
        ops::set_parallel_work_threshold(threads > 1 ? 0 : default_threshold);
        Rng rng(seed);
        const std::size_t B = static_cast<std::size_t>(rng.uniform(1, 6));
        std::vector<HeadEntry> entries;
        for (std::size_t i = 0; i < B; ++i) entries.push_back(random_head_entry(rng, reference, i));
        const std::string where = "seed " + std::to_string(seed) + ", " + k.name + " / " + dtype_name(p) + ", " +
                                  std::to_string(B) + " entries, threads " + std::to_string(threads);

        std::vector<std::unique_ptr<KVCache>> batched, alone, ref;
        std::vector<EagleHead::BatchEntry> prefill;
        for (const HeadEntry& e : entries) {
          batched.push_back(cpu_head.new_cache(24));
          alone.push_back(cpu_head.new_cache(24));
          ref.push_back(reference.new_cache(24));
          if (e.prefix.tokens.empty()) continue;
          prefill.push_back({batched.back().get(), &e.prefix});
          cpu_head.forward(*alone.back(), e.prefix);
          reference.forward(*ref.back(), e.prefix);
        }
        cpu_head.forward_batch(prefill);

        std::vector<EagleHead::BatchEntry> batch;
        for (std::size_t i = 0; i < B; ++i) batch.push_back({batched[i].get(), &entries[i].input});
        const std::vector<EagleHead::Output> got = cpu_head.forward_batch(batch);
        ASSERT_EQ(got.size(), B) << where;
        for (std::size_t i = 0; i < B; ++i) {
          const std::string w = where + ", " + entries[i].label;
          const EagleHead::Output own = cpu_head.forward(*alone[i], entries[i].input);
          const EagleHead::Output want = reference.forward(*ref[i], entries[i].input);
          EXPECT_TRUE(bitwise_equal(got[i].logits, own.logits)) << w << ": logits vs its own forward";
          EXPECT_TRUE(bitwise_equal(got[i].hidden, own.hidden)) << w << ": hidden vs its own forward";
          EXPECT_TRUE(bitwise_equal(got[i].logits, want.logits)) << w << ": logits vs the reference";
          EXPECT_TRUE(bitwise_equal(got[i].hidden, want.hidden)) << w << ": hidden vs the reference";
          EXPECT_TRUE(cpu_cache(*batched[i]).equals(cpu_cache(*alone[i]))) << w << ": KV cache vs its own forward";
          EXPECT_TRUE(cpu_cache(*batched[i]).equals(dense_cache(*ref[i]))) << w << ": KV cache vs the reference";
        }
      }
    }
  }
}

TEST(CpuEagleHeadBatchErrors, ABadEntryThrowsNamingItAndLeavesEveryCacheUntouched) {
  const EagleHead reference = testing::make_head(testing::find_case("eagle3_safeailab"));
  const EagleHead cpu_head = cpu::cpu_eagle_head(reference);
  auto c0 = cpu_head.new_cache(8), c1 = cpu_head.new_cache(8), c2 = cpu_head.new_cache(8);
  const EagleHead::Input prefix = testing::random_input(reference, 3, 1);
  cpu_head.forward(*c0, prefix);
  auto c0_before = cpu_head.new_cache(8);
  cpu_head.forward(*c0_before, prefix);
  const EagleHead::Input good0 = testing::random_input(reference, 2, 2), good1 = testing::random_input(reference, 1, 3);
  auto untouched = [&](const std::string& what) {
    EXPECT_EQ(c0->length(), 3) << what;
    EXPECT_TRUE(cpu_cache(*c0).equals(cpu_cache(*c0_before))) << what;
    EXPECT_EQ(c1->length(), 0) << what;
    EXPECT_EQ(c2->length(), 0) << what;
  };

  EagleHead::Input bad_token = testing::random_input(reference, 2, 4);
  bad_token.tokens[1] = 97;
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward_batch({{c0.get(), &good0}, {c1.get(), &good1}, {c2.get(), &bad_token}}); }),
                  "eagle head forward_batch: entry 2: eagle head forward: token id 97 outside the vocabulary [0, 97)");
  untouched("bad token");

  EXPECT_CONTAINS(error_of([&] { cpu_head.forward_batch({{c0.get(), &good0}, {c1.get(), &good1}, {c1.get(), &good0}}); }),
                  "eagle head forward_batch: entry 2: uses a KV cache an earlier entry uses");
  untouched("duplicate cache");

  auto ref_cache = reference.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward_batch({{c0.get(), &good0}, {ref_cache.get(), &good1}}); }),
                  "eagle head forward_batch: entry 1: eagle head forward: the KV cache was not created by the cpu backend");
  untouched("reference cache");
  EXPECT_EQ(ref_cache->length(), 0);

  const cpu::CpuTransformer target_cpu(testing::tiny_llama(), testing::target().weights(), Dtype::F32);
  auto target_cache = target_cpu.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward_batch({{c0.get(), &good0}, {target_cache.get(), &good1}}); }),
                  "eagle head forward_batch: entry 1: eagle head forward: the KV cache has 3 layers of width 16, the head "
                  "needs 1 of width 24");
  untouched("target's cache");

  auto small = cpu_head.new_cache(2);
  const EagleHead::Input three = testing::random_input(reference, 3, 5);
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward_batch({{c0.get(), &good0}, {c1.get(), &good1}, {small.get(), &three}}); }),
                  "eagle head forward_batch: entry 2: KV cache: 3 new tokens do not fit");
  untouched("overflow");
  EXPECT_EQ(small->length(), 0);

  EagleHead::Input bad_mask = testing::random_input(reference, 2, 6);
  bad_mask.mask = AttentionMask::causal(0, 2);  // entry 0's cache holds 3: 2x5 expected
  EXPECT_CONTAINS(error_of([&] { cpu_head.forward_batch({{c0.get(), &bad_mask}, {c1.get(), &good1}}); }),
                  "eagle head forward_batch: entry 0: forward: attention mask is 2x2, expected 2x5");
  untouched("bad mask");

  EXPECT_TRUE(cpu_head.forward_batch({}).empty());
  const std::vector<EagleHead::Output> ok = cpu_head.forward_batch({{c0.get(), &good0}, {c1.get(), &good1}});
  EXPECT_TRUE(bitwise_equal(ok[0].logits, cpu_head.forward(*c0_before, good0).logits));
  EXPECT_EQ(c1->length(), 1);
}

}  // namespace
}  // namespace specdec
