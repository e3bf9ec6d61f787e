// The CUDA backend's batched forwards on the device under test (the CPU grid emulator in the cpu
// tests, the GPU in tests/gpu): CudaTransformer::forward_batch and the EAGLE head engine's
// forward_batch over random ragged batches under fixed, named seeds — 1 to 4 sequences of 1 to 6
// rows, chains and draft trees at tree positions, caches of different lengths, argmax_only, final
// and aux hidden states, projected rows on some — each result bitwise what forward gives that
// sequence alone and what the reference gives, every cache too; one pass of more rows than a
// linear launch takes; every launch under three thread schedules. And the errors: a cache used
// twice, a bad request in a later entry, which must leave every cache as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "optimized/cuda/cuda_eagle_head.hpp"
#include "optimized/cuda/cuda_kv_cache.hpp"
#include "optimized/cuda/cuda_transformer.hpp"
#include "reference/core/error.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/optimized/device_under_test.hpp"
#include "tests/optimized/head_fixtures.hpp"
#include "tests/reference/error_capture.hpp"

namespace specdec {
namespace {

class CudaForwardBatch : public testing::DeviceTest {};
class CudaForwardBatchErrors : public testing::DeviceTest {};

using testing::bitwise_equal;
using testing::dense_cache;
using testing::error_of;
using testing::random_tokens;

constexpr uint64_t kWeightSeed = 4321;
constexpr int kCapacity = 24;  // three rounds of at most six rows
constexpr int kRounds = 3;

const cuda::CudaKVCache& cuda_cache(const KVCache& c) { return dynamic_cast<const cuda::CudaKVCache&>(c); }

// A random tree of T nodes under `length` cached slots: its mask, and each node's position (the
// one after its parent's). Returns a description for failure messages.
std::string random_tree(std::mt19937_64& rng, int T, int length, std::optional<AttentionMask>& mask,
                        std::vector<int32_t>& positions) {
  std::vector<int> parents(static_cast<std::size_t>(T));
  for (int t = 0; t < T; ++t) parents[static_cast<std::size_t>(t)] = t == 0 ? -1 : static_cast<int>(rng() % (t + 1)) - 1;
  mask = AttentionMask::tree(length, parents);
  positions.clear();
  for (int t = 0; t < T; ++t) {
    int depth = 0;
    for (int p = parents[static_cast<std::size_t>(t)]; p >= 0; p = parents[static_cast<std::size_t>(p)]) ++depth;
    positions.push_back(length + depth);
  }
  return " tree";
}

// 0 to T + 1 rows of T, repeats and any order allowed.
std::vector<int> random_rows(std::mt19937_64& rng, int T) {
  std::vector<int> rows(rng() % static_cast<uint64_t>(T + 2));
  for (int& r : rows) r = static_cast<int>(rng() % static_cast<uint64_t>(T));
  return rows;
}

// A random request of 1–6 tokens continuing a cache of `length` slots: a chain or a draft tree,
// some logit rows, argmax_only, final_hidden and aux states on some. `what` describes it.
ForwardRequest random_request(std::mt19937_64& rng, const ModelConfig& c, int length, std::string& what) {
  const int T = 1 + static_cast<int>(rng() % 6);
  ForwardRequest r;
  r.tokens = random_tokens(T, c.vocab_size, rng());
  what = std::to_string(T) + " rows on " + std::to_string(length) + " cached,";
  what += rng() % 2 ? random_tree(rng, T, length, r.mask, r.positions) : " chain";
  r.logit_rows = random_rows(rng, T);
  r.argmax_only = rng() % 3 == 0;
  r.final_hidden = rng() % 2 == 0;
  if (rng() % 2 == 0) r.aux_layers = {c.num_hidden_layers, 0, static_cast<int>(rng() % (c.num_hidden_layers + 1))};
  what += ", " + std::to_string(r.logit_rows.size()) + " logit rows" + (r.argmax_only ? " (argmax only)" : "") +
          (r.final_hidden ? ", final hidden" : "") + (r.aux_layers.empty() ? "" : ", aux states");
  return r;
}

void expect_same_result(const ForwardResult& got, const ForwardResult& want, const std::string& where) {
  EXPECT_TRUE(bitwise_equal(got.logits, want.logits)) << where << ": logits";
  EXPECT_EQ(got.argmax, want.argmax) << where << ": argmax";
  EXPECT_TRUE(bitwise_equal(got.final_hidden, want.final_hidden)) << where << ": final hidden";
  EXPECT_TRUE(bitwise_equal(got.aux_hidden, want.aux_hidden)) << where << ": aux hidden";
}

// Which of S sequences take part in a round, in a random order (at least one).
std::vector<int> random_members(std::mt19937_64& rng, int S) {
  std::vector<int> order;
  for (int s = 0; s < S; ++s)
    if (rng() % 4 != 0) order.push_back(s);
  if (order.empty()) order.push_back(static_cast<int>(rng() % static_cast<uint64_t>(S)));
  std::shuffle(order.begin(), order.end(), rng);
  return order;
}

struct TargetTwin {
  TargetTwin(const ModelConfig& c, Dtype p, std::shared_ptr<cuda::DeviceRuntime> rt)
      : reference(c, cpu::rounded_llama_weights(testing::make_model(c, kWeightSeed).weights(), p)),
        cuda(std::move(rt), c, testing::make_model(c, kWeightSeed).weights(), p) {}
  Transformer reference;
  cuda::CudaTransformer cuda;
};

// kRounds batches of 1–4 sequences drawn from `seed`; each sequence's caches: batched (filled by
// forward_batch), alone (by forward) and the reference's.
void expect_batches_equal_alone_and_reference(const std::string& name, const ModelConfig& cfg, Dtype p, uint64_t seed) {
  const TargetTwin twin(cfg, p, testing::test_device());
  std::mt19937_64 rng(seed);
  const int S = 1 + static_cast<int>(rng() % 4);
  std::vector<std::unique_ptr<KVCache>> batched, alone, reference;
  for (int s = 0; s < S; ++s) {
    batched.push_back(twin.cuda.new_cache(kCapacity));
    alone.push_back(twin.cuda.new_cache(kCapacity));
    reference.push_back(twin.reference.new_cache(kCapacity));
  }
  const std::string where = name + " / " + dtype_name(p) + ", seed " + std::to_string(seed);
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<int> members = random_members(rng, S);
    std::vector<ForwardRequest> requests(members.size());
    std::vector<std::string> what(members.size());
    std::vector<BatchEntry> batch;
    for (std::size_t i = 0; i < members.size(); ++i) {
      KVCache& cache = *batched[static_cast<std::size_t>(members[i])];
      requests[i] = random_request(rng, cfg, cache.length(), what[i]);
      batch.push_back({&cache, &requests[i]});
    }
    const std::vector<ForwardResult> got = twin.cuda.forward_batch(batch);
    ASSERT_EQ(got.size(), batch.size()) << where;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const std::size_t s = static_cast<std::size_t>(members[i]);
      const std::string at = where + ", round " + std::to_string(round) + ", entry " + std::to_string(i) + " of " +
                             std::to_string(batch.size()) + " (sequence " + std::to_string(s) + ": " + what[i] + ")";
      expect_same_result(got[i], twin.cuda.forward(*alone[s], requests[i]), at + " vs alone");
      expect_same_result(got[i], twin.reference.forward(*reference[s], requests[i]), at + " vs reference");
    }
    for (int s = 0; s < S; ++s) {
      const std::size_t u = static_cast<std::size_t>(s);
      EXPECT_TRUE(cuda_cache(*batched[u]).equals(cuda_cache(*alone[u]))) << where << ", round " << round << ": cache of sequence " << s << " vs alone";
      EXPECT_TRUE(cuda_cache(*batched[u]).equals(dense_cache(*reference[u]))) << where << ", round " << round << ": cache of sequence " << s << " vs reference";
    }
  }
}

// The compositions' seeds: config (or head) i runs seed + i of each, so that the configs see
// different compositions; failures name the seed run.
constexpr uint64_t kCompositionSeeds[] = {101, 202, 303};

TEST_F(CudaForwardBatch, RandomBatchesEqualEachSequenceAloneAndTheReference) {
  // Every model-family fixture (GQA/MHA/MQA, biases, Qwen3's per-head q/k norms, llama3 RoPE,
  // sliding windows), the precisions in turn.
  const std::vector<testing::NamedConfig> configs = testing::cpu_fixture_configs();
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const Dtype p = testing::cpu_precisions()[i % testing::cpu_precisions().size()];
    for (const uint64_t seed : kCompositionSeeds) expect_batches_equal_alone_and_reference(configs[i].name, configs[i].config, p, seed + i);
  }
}

TEST_F(CudaForwardBatch, MoreRowsThanOneLinearLaunchTakesSplitAcrossSequences) {
  // 30 + 25 + 20 rows: the linears go in chunks of 64 rows, the second starting inside entry 2.
  const ModelConfig cfg = testing::tiny_llama();
  const TargetTwin twin(cfg, Dtype::BF16, testing::test_device());
  std::vector<ForwardRequest> requests;
  for (const int T : {30, 25, 20}) {
    ForwardRequest r = ForwardRequest::chain(random_tokens(T, cfg.vocab_size, 505u + T));
    r.logit_rows = {T - 1, 0};
    r.final_hidden = true;
    requests.push_back(r);
  }
  std::vector<std::unique_ptr<KVCache>> batched, alone, reference;
  std::vector<BatchEntry> batch;
  for (const ForwardRequest& r : requests) {
    batched.push_back(twin.cuda.new_cache(32));
    alone.push_back(twin.cuda.new_cache(32));
    reference.push_back(twin.reference.new_cache(32));
    batch.push_back({batched.back().get(), &r});
  }
  const std::vector<ForwardResult> got = twin.cuda.forward_batch(batch);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const std::string at = "seed 505, entry " + std::to_string(i);
    expect_same_result(got[i], twin.cuda.forward(*alone[i], requests[i]), at + " vs alone");
    expect_same_result(got[i], twin.reference.forward(*reference[i], requests[i]), at + " vs reference");
    EXPECT_TRUE(cuda_cache(*batched[i]).equals(dense_cache(*reference[i]))) << at << ": cache";
  }
}

TEST_F(CudaForwardBatch, EveryLaunchOfABatchIsScheduleIndependent) {
  // The emulator runs each launch under three thread schedules and throws when memory differs.
  const ModelConfig cfg = testing::tiny_llama();
  const TargetTwin twin(cfg, Dtype::F32, testing::schedule_checking_device());
  auto a = twin.cuda.new_cache(8), b = twin.cuda.new_cache(8);
  auto ra = twin.reference.new_cache(8), rb = twin.reference.new_cache(8);
  const ForwardRequest prefix = ForwardRequest::chain(random_tokens(2, cfg.vocab_size, 606));
  twin.cuda.forward(*a, prefix);
  twin.reference.forward(*ra, prefix);
  ForwardRequest tree = ForwardRequest::chain(random_tokens(3, cfg.vocab_size, 607));
  tree.mask = AttentionMask::tree(2, {-1, 0, 0});
  tree.positions = {2, 3, 3};
  const ForwardRequest chain = ForwardRequest::chain(random_tokens(1, cfg.vocab_size, 608));
  const std::vector<ForwardResult> got = twin.cuda.forward_batch({{a.get(), &tree}, {b.get(), &chain}});
  EXPECT_TRUE(bitwise_equal(got[0].logits, twin.reference.forward(*ra, tree).logits)) << "seed 606, the tree";
  EXPECT_TRUE(bitwise_equal(got[1].logits, twin.reference.forward(*rb, chain).logits)) << "seed 606, the chain";
}

TEST_F(CudaForwardBatch, AnEmptyBatchGivesNothing) {
  const TargetTwin twin(testing::tiny_llama(), Dtype::F32, testing::test_device());
  EXPECT_TRUE(twin.cuda.forward_batch({}).empty());
}

// Caches a (3 tokens) and b (2 tokens) and their twins with the same history: a failed batch must
// leave a and b equal to their twins.
struct ErrorFixture {
  explicit ErrorFixture(const TargetTwin& twin) {
    const ModelConfig& c = twin.cuda.config();
    for (auto* pair : {&a, &b}) {
      const int n = pair == &a ? 3 : 2;
      const ForwardRequest r = ForwardRequest::chain(random_tokens(n, c.vocab_size, 707u + n));
      pair->first = twin.cuda.new_cache(6);
      pair->second = twin.cuda.new_cache(6);
      twin.cuda.forward(*pair->first, r);
      twin.cuda.forward(*pair->second, r);
    }
  }
  void expect_untouched(const std::string& where) const {
    EXPECT_TRUE(cuda_cache(*a.first).equals(cuda_cache(*a.second))) << where << ": cache a was touched";
    EXPECT_TRUE(cuda_cache(*b.first).equals(cuda_cache(*b.second))) << where << ": cache b was touched";
  }
  std::pair<std::unique_ptr<KVCache>, std::unique_ptr<KVCache>> a, b;  // (the cache, its twin)
};

TEST_F(CudaForwardBatchErrors, ADuplicateCacheOrABadLaterEntryLeavesEveryCacheAsItWas) {
  const ModelConfig cfg = testing::tiny_llama();
  const TargetTwin twin(cfg, Dtype::F32, testing::test_device());
  const ErrorFixture f(twin);
  KVCache* a = f.a.first.get();
  KVCache* b = f.b.first.get();
  const ForwardRequest good = ForwardRequest::chain({4, 5});
  // The messages of the reference's forward_batch, where it checks the same.
  auto ra = twin.reference.new_cache(6), rb = twin.reference.new_cache(6);
  auto expect_refused = [&](const std::vector<BatchEntry>& batch, const std::vector<BatchEntry>& on_reference,
                            const std::string& message, const std::string& what) {
    const std::string got = error_of([&] { twin.cuda.forward_batch(batch); });
    EXPECT_CONTAINS(got, message) << " (" << what << ")";
    if (!on_reference.empty()) {
      EXPECT_EQ(got, error_of([&] { twin.reference.forward_batch(on_reference); })) << what;
    }
    f.expect_untouched(what);
  };

  expect_refused({{a, &good}, {a, &good}}, {{ra.get(), &good}, {ra.get(), &good}},
                 "forward_batch: batch entry 1 uses a KV cache an earlier entry uses", "a cache used twice");
  expect_refused({{a, &good}, {nullptr, &good}}, {}, "forward_batch: batch entry 1 has no cache", "no cache");
  ForwardRequest bad_token = good;
  bad_token.tokens[1] = cfg.vocab_size;
  expect_refused({{a, &good}, {b, &bad_token}}, {{ra.get(), &good}, {rb.get(), &bad_token}},
                 "forward_batch: entry 1: forward: token id 97 outside the vocabulary [0, 97)", "a bad token in entry 1");
  ForwardRequest bad_mask = good;
  bad_mask.mask = AttentionMask::causal(0, 2);  // b holds 2 slots: 2x4 expected
  expect_refused({{a, &good}, {b, &bad_mask}}, {}, "forward_batch: entry 1: forward: attention mask is 2x2, expected 2x4",
                 "a mask of the wrong size in entry 1");
  ForwardRequest bad_row = good;
  bad_row.logit_rows = {2};
  expect_refused({{b, &good}, {a, &bad_row}}, {}, "forward_batch: entry 1: forward: logit row 2 outside [0, 2)",
                 "a logit row outside the tokens in entry 1");
  const ForwardRequest too_long = ForwardRequest::chain({1, 2, 3, 4});
  expect_refused({{b, &good}, {a, &too_long}}, {}, "forward_batch: entry 1: KV cache: 4 new tokens do not fit",
                 "entry 1 beyond its cache's capacity");
  auto reference_cache = twin.reference.new_cache(6);
  expect_refused({{a, &good}, {reference_cache.get(), &good}}, {},
                 "forward_batch: entry 1: forward: the KV cache was not created by the cuda backend", "a reference cache in entry 1");
  const TargetTwin elsewhere(cfg, Dtype::F32, testing::test_device());
  auto foreign = elsewhere.cuda.new_cache(6);
  expect_refused({{a, &good}, {foreign.get(), &good}}, {}, "forward_batch: entry 1: forward: the KV cache lives on another device runtime",
                 "a cache of another runtime in entry 1");
  EXPECT_EQ(foreign->length(), 0);
}

TEST_F(CudaForwardBatchErrors, AnArgmaxRefusedInALaterEntryNamesIt) {
  // An LM head row of NaN: logit 5 is NaN in every row. Entry 0 takes its logits as they are;
  // entry 1 asks for the argmax, which the reference refuses.
  const ModelConfig cfg = testing::tiny_llama();
  LlamaWeights w = testing::make_model(cfg, kWeightSeed).weights();
  Matrix& head = cfg.tie_word_embeddings ? w.embed_tokens : w.lm_head;
  head.row(5).setConstant(std::numeric_limits<float>::quiet_NaN());
  const cuda::CudaTransformer model(testing::test_device(), cfg, w, Dtype::F32);
  auto a = model.new_cache(4), b = model.new_cache(4);
  const ForwardRequest logits = ForwardRequest::chain({1, 2});
  ForwardRequest picks = logits;
  picks.argmax_only = true;
  EXPECT_EQ(error_of([&] { model.forward_batch({{a.get(), &logits}, {b.get(), &picks}}); }),
            "forward_batch: entry 1: argmax: logit of token 5 is NaN; expected finite logits (-inf allowed for masked tokens)");
}

// ---- EAGLE heads ----------------------------------------------------------------------------------

// A random head input of 1–6 rows on a cache of `length` slots: a chain or a tree, projected rows
// on some (EAGLE-3 / P-EAGLE; sometimes every row, with H-wide features), some logit rows.
EagleHead::Input random_head_input(std::mt19937_64& rng, const EagleHead& head, int length, std::string& what) {
  const EagleHeadConfig& c = head.config();
  const int T = 1 + static_cast<int>(rng() % 6);
  std::vector<int> projected;
  const bool every_row_narrow = !c.reads_final_hidden() && rng() % 4 == 0;
  if (!c.reads_final_hidden())
    for (int t = 0; t < T; ++t)
      if (every_row_narrow || rng() % 3 == 0) projected.push_back(t);
  EagleHead::Input in = testing::random_input(head, T, rng(), projected);
  if (every_row_narrow) {
    const Matrix narrow = in.features.leftCols(c.layer.hidden_size);
    in.features = narrow;
  }
  what = std::to_string(T) + " rows on " + std::to_string(length) + " cached,";
  what += rng() % 2 ? random_tree(rng, T, length, in.mask, in.positions) : " chain";
  in.logit_rows = random_rows(rng, T);
  what += ", " + std::to_string(projected.size()) + " projected" + (every_row_narrow ? " (H wide)" : "") + ", " +
          std::to_string(in.logit_rows.size()) + " logit rows";
  return in;
}

void expect_head_batches_equal_alone_and_reference(const std::string& name, Dtype p, uint64_t seed) {
  const EagleHead reference = testing::rounded_head(testing::find_case(name), p);
  const EagleHead device = cuda::cuda_eagle_head(testing::test_device(), reference);
  std::mt19937_64 rng(seed);
  const int S = 1 + static_cast<int>(rng() % 4);
  std::vector<std::unique_ptr<KVCache>> batched, alone, ref;
  for (int s = 0; s < S; ++s) {
    batched.push_back(device.new_cache(kCapacity));
    alone.push_back(device.new_cache(kCapacity));
    ref.push_back(reference.new_cache(kCapacity));
  }
  const std::string where = name + " / " + dtype_name(p) + ", seed " + std::to_string(seed);
  for (int round = 0; round < kRounds; ++round) {
    const std::vector<int> members = random_members(rng, S);
    std::vector<EagleHead::Input> inputs(members.size());
    std::vector<std::string> what(members.size());
    std::vector<EagleHead::BatchEntry> batch;
    for (std::size_t i = 0; i < members.size(); ++i) {
      KVCache& cache = *batched[static_cast<std::size_t>(members[i])];
      inputs[i] = random_head_input(rng, reference, cache.length(), what[i]);
      batch.push_back({&cache, &inputs[i]});
    }
    const std::vector<EagleHead::Output> got = device.forward_batch(batch);
    ASSERT_EQ(got.size(), batch.size()) << where;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const std::size_t s = static_cast<std::size_t>(members[i]);
      const std::string at = where + ", round " + std::to_string(round) + ", entry " + std::to_string(i) + " of " +
                             std::to_string(batch.size()) + " (sequence " + std::to_string(s) + ": " + what[i] + ")";
      const EagleHead::Output one = device.forward(*alone[s], inputs[i]);
      const EagleHead::Output want = reference.forward(*ref[s], inputs[i]);
      EXPECT_TRUE(bitwise_equal(got[i].logits, one.logits)) << at << ": logits vs alone";
      EXPECT_TRUE(bitwise_equal(got[i].hidden, one.hidden)) << at << ": hidden vs alone";
      EXPECT_TRUE(bitwise_equal(got[i].logits, want.logits)) << at << ": logits vs reference";
      EXPECT_TRUE(bitwise_equal(got[i].hidden, want.hidden)) << at << ": hidden vs reference";
    }
    for (int s = 0; s < S; ++s) {
      const std::size_t u = static_cast<std::size_t>(s);
      EXPECT_TRUE(cuda_cache(*batched[u]).equals(cuda_cache(*alone[u]))) << where << ", round " << round << ": cache of sequence " << s << " vs alone";
      EXPECT_TRUE(cuda_cache(*batched[u]).equals(dense_cache(*ref[u]))) << where << ", round " << round << ": cache of sequence " << s << " vs reference";
    }
  }
}

TEST_F(CudaForwardBatch, RandomHeadBatchesEqualEachSequenceAloneAndTheReference) {
  // Every head config: EAGLE-1 (fc over [embedding | feature]), EAGLE-3 (projected rows, its own
  // H and q/k norms), P-EAGLE (several layers, biases); the precisions in turn.
  const std::vector<testing::Case> heads = testing::cases();
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const Dtype p = testing::cpu_precisions()[i % testing::cpu_precisions().size()];
    for (const uint64_t seed : {kCompositionSeeds[0], kCompositionSeeds[1]}) {
      expect_head_batches_equal_alone_and_reference(heads[i].name, p, seed + 10 + i);
    }
  }
}

TEST_F(CudaForwardBatchErrors, HeadBatchesCheckEveryEntryBeforeTouchingACache) {
  const EagleHead reference = testing::make_head(testing::find_case("eagle3_safeailab"));
  const auto runtime = std::shared_ptr<cuda::DeviceRuntime>(testing::test_device());
  const EagleHead device = cuda::cuda_eagle_head(runtime, reference);
  auto a = device.new_cache(6), a_twin = device.new_cache(6), b = device.new_cache(6), b_twin = device.new_cache(6);
  const EagleHead::Input prefix = testing::random_input(reference, 2, 808);
  for (KVCache* c : {a.get(), a_twin.get(), b.get(), b_twin.get()}) device.forward(*c, prefix);
  const EagleHead::Input good = testing::random_input(reference, 3, 809);
  auto expect_refused = [&](const std::vector<EagleHead::BatchEntry>& batch, const std::string& message, const std::string& what) {
    EXPECT_CONTAINS(error_of([&] { device.forward_batch(batch); }), message) << " (" << what << ")";
    EXPECT_TRUE(cuda_cache(*a).equals(cuda_cache(*a_twin))) << what << ": cache a was touched";
    EXPECT_TRUE(cuda_cache(*b).equals(cuda_cache(*b_twin))) << what << ": cache b was touched";
  };
  expect_refused({{a.get(), &good}, {a.get(), &good}}, "eagle head forward_batch: entry 1: uses a KV cache an earlier entry uses",
                 "a cache used twice");
  EagleHead::Input bad_token = good;
  bad_token.tokens[2] = 97;
  expect_refused({{a.get(), &good}, {b.get(), &bad_token}},
                 "eagle head forward_batch: entry 1: eagle head forward: token id 97 outside the vocabulary [0, 97)",
                 "a bad token in entry 1");
  EagleHead::Input bad_mask = good;
  bad_mask.mask = AttentionMask::causal(0, 3);  // b holds 2 slots: 3x5 expected
  expect_refused({{a.get(), &good}, {b.get(), &bad_mask}},
                 "eagle head forward_batch: entry 1: forward: attention mask is 3x3, expected 3x5", "a mask of the wrong size in entry 1");
  const EagleHead::Input too_long = testing::random_input(reference, 5, 810);
  expect_refused({{a.get(), &good}, {b.get(), &too_long}}, "eagle head forward_batch: entry 1: KV cache: 5 new tokens do not fit",
                 "entry 1 beyond its cache's capacity");
  const cuda::CudaTransformer target(runtime, testing::tiny_llama(), testing::target().weights(), Dtype::F32);
  auto target_cache = target.new_cache(8);
  expect_refused({{a.get(), &good}, {target_cache.get(), &good}},
                 "eagle head forward_batch: entry 1: eagle head forward: the KV cache has 3 layers of width 16, the head needs 1 of width 24",
                 "a target's cache in entry 1");
  auto reference_cache = reference.new_cache(8);
  expect_refused({{a.get(), &good}, {reference_cache.get(), &good}},
                 "eagle head forward_batch: entry 1: eagle head forward: the KV cache was not created by the cuda backend",
                 "a reference cache in entry 1");
  EXPECT_EQ(target_cache->length(), 0);
}

}  // namespace
}  // namespace specdec
