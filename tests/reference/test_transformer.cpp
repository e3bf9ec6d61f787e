// The reference forward: agreement with an independent long-double forward, batch invariance,
// thread-count invariance, tree masks, KV cache compaction, RoPE scaling, and its error paths.
#include <gtest/gtest.h>

#include <random>

#include "reference/core/error.hpp"
#include "reference/model/ops.hpp"
#include "model_fixtures.hpp"
#include "naive_forward.hpp"
#include "tests/reference/batch_invariance.hpp"
#include "tests/reference/tree_fixtures.hpp"

namespace specdec {
namespace {

using testing::bitwise_equal;
using testing::dense_cache;
using testing::expect_batch_invariant;
using testing::fixture_configs;
using testing::make_model;
using testing::random_tokens;

constexpr uint64_t kSeed = 1234;

TEST(Transformer, MatchesIndependentLongDoubleForward) {
  for (const auto& [name, cfg] : fixture_configs()) {
    Transformer model = make_model(cfg, kSeed);
    const auto tokens = random_tokens(24, cfg.vocab_size, kSeed + 1);  // 24 > 16: llama3 long-wave band used
    auto cache = model.new_cache(64);
    Matrix logits = model.forward(*cache, ForwardRequest::chain(tokens)).logits;
    const auto expected = testing::naive_forward(cfg, model.weights(), tokens);
    double worst = 0;
    for (int t = 0; t < logits.rows(); ++t)
      for (int v = 0; v < logits.cols(); ++v) worst = std::max(worst, static_cast<double>(std::abs(logits(t, v) - expected[t][v])));
    EXPECT_LT(worst, 1e-4) << "config " << name << ", seed " << kSeed << ": max |fp32 − long double| logit error";
  }
}

// A T-token forward equals T one-token forwards and uneven chunks, bitwise.
TEST(Transformer, BatchInvariant) {
  for (const auto& [name, cfg] : fixture_configs()) {
    const Transformer model = make_model(cfg, kSeed);
    expect_batch_invariant(model, random_tokens(13, cfg.vocab_size, kSeed + 2), name,
                           [](const KVCache& a, const KVCache& b) { return dense_cache(a).equals(dense_cache(b)); });
  }
}

TEST(Transformer, ThreadCountInvariant) {
  const int saved = ops::num_threads();
  const long long saved_threshold = ops::parallel_work_threshold();
  ops::set_parallel_work_threshold(0);  // thread every loop, however small
  for (const auto& [name, cfg] : fixture_configs()) {
    Transformer model = make_model(cfg, kSeed);
    const auto tokens = random_tokens(9, cfg.vocab_size, kSeed + 3);
    std::vector<Matrix> results;
    for (int threads : {1, 2, 3, 5}) {
      ops::set_num_threads(threads);
      auto cache = model.new_cache(16);
      results.push_back(model.forward(*cache, ForwardRequest::chain(tokens)).logits);
    }
    for (size_t i = 1; i < results.size(); ++i)
      EXPECT_TRUE(bitwise_equal(results[0], results[i])) << name << ": thread setting #" << i << " differs from 1 thread";
  }
  ops::set_num_threads(saved);
  ops::set_parallel_work_threshold(saved_threshold);
}

TEST(Transformer, TreeMaskEqualsChainForEveryPath) {
  for (const auto& [name, cfg] : fixture_configs()) {
    Transformer model = make_model(cfg, kSeed);
    const auto prefix = random_tokens(6, cfg.vocab_size, kSeed + 4);
    const auto nodes = random_tokens(static_cast<int>(testing::kTreeParents.size()), cfg.vocab_size, kSeed + 5);
    testing::expect_tree_equals_chains(model, prefix, nodes, name, [](const KVCache& a, const KVCache& b) {
      return dynamic_cast<const DenseKVCache&>(a).equals(dynamic_cast<const DenseKVCache&>(b));
    });
  }
}

TEST(Transformer, TruncateThenContinueEqualsFreshRun) {
  const auto cfg = fixture_configs()[0].config;
  Transformer model = make_model(cfg, kSeed);
  const auto a = random_tokens(8, cfg.vocab_size, kSeed + 6);
  const auto b = random_tokens(3, cfg.vocab_size, kSeed + 7);
  auto cache = model.new_cache(32);
  model.forward(*cache, ForwardRequest::chain(a));
  model.forward(*cache, ForwardRequest::chain(random_tokens(4, cfg.vocab_size, kSeed + 8)));  // rejected drafts
  cache->truncate(8);
  Matrix continued = model.forward(*cache, ForwardRequest::chain(b)).logits;
  std::vector<int32_t> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  auto fresh = model.new_cache(32);
  Matrix reference = model.forward(*fresh, ForwardRequest::chain(ab)).logits;
  EXPECT_TRUE(bitwise_equal(continued, reference.bottomRows(3)));
  EXPECT_TRUE(dense_cache(*cache).equals(dense_cache(*fresh)));
}

TEST(Transformer, AuxHiddenStatesFollowHuggingFaceIndexing) {
  const auto cfg = fixture_configs()[0].config;
  Transformer model = make_model(cfg, kSeed);
  const auto tokens = random_tokens(4, cfg.vocab_size, kSeed + 9);
  auto cache = model.new_cache(8);
  ForwardRequest r = ForwardRequest::chain(tokens);
  r.final_hidden = true;
  r.aux_layers = {cfg.num_hidden_layers, 0};
  ForwardResult out = model.forward(*cache, r);
  const int H = cfg.hidden_size;
  EXPECT_TRUE(bitwise_equal(out.aux_hidden.leftCols(H), out.final_hidden));
  for (int t = 0; t < 4; ++t)
    EXPECT_TRUE(bitwise_equal(out.aux_hidden.block(t, H, 1, H), model.weights().embed_tokens.middleRows(tokens[t], 1)));
}

// Layer states: each layer's output is the next layer's input state (aux hidden l + 1), the input
// norm and post-attention norm are the norms of the states they follow, and asking for them
// changes no logit.
TEST(Transformer, LayerStatesAreTheResidualStreamBetweenBlocks) {
  for (const auto& fixture : fixture_configs()) {
    const ModelConfig& cfg = fixture.config;
    Transformer model = make_model(cfg, kSeed);
    const auto tokens = random_tokens(5, cfg.vocab_size, kSeed + 11);
    const int L = cfg.num_hidden_layers;
    ForwardRequest plain = ForwardRequest::chain(tokens);
    for (int l = 0; l <= L; ++l) plain.aux_layers.push_back(l);
    ForwardRequest with = plain;
    with.layer_states = true;
    auto c1 = model.new_cache(8), c2 = model.new_cache(8);
    const ForwardResult a = model.forward(*c1, plain);
    const ForwardResult b = model.forward(*c2, with);
    EXPECT_TRUE(bitwise_equal(a.logits, b.logits)) << fixture.name;
    EXPECT_TRUE(a.layer_states.empty()) << fixture.name;
    ASSERT_EQ(b.layer_states.size(), static_cast<std::size_t>(4 * L)) << fixture.name;
    const int H = cfg.hidden_size;
    for (int l = 0; l < L; ++l) {
      const LayerWeights& w = model.weights().layers[static_cast<std::size_t>(l)];
      const Matrix& input = b.aux_hidden.middleCols(static_cast<Eigen::Index>(l) * H, H);
      EXPECT_TRUE(bitwise_equal(b.layer_states[4 * l], ops::rms_norm(input, w.input_layernorm, cfg.rms_norm_eps))) << fixture.name << " layer " << l;
      EXPECT_TRUE(bitwise_equal(b.layer_states[4 * l + 2], ops::rms_norm(b.layer_states[4 * l + 1], w.post_attention_layernorm, cfg.rms_norm_eps)))
          << fixture.name << " layer " << l;
      if (l + 1 < L) {
        EXPECT_TRUE(bitwise_equal(b.layer_states[4 * l + 3], b.aux_hidden.middleCols(static_cast<Eigen::Index>(l + 1) * H, H)))
            << fixture.name << " layer " << l;
      }
    }
  }
}

// GQA is grouping, not something else: duplicating each KV head for its query heads gives an
// equivalent multi-head model whose outputs match to rounding.
TEST(Transformer, GroupedQueryAttentionEqualsExpandedMultiHead) {
  const auto cfg = fixture_configs()[0].config;  // 6 query heads, 2 KV heads
  Transformer gqa = make_model(cfg, kSeed);
  ModelConfig mha_cfg = cfg;
  mha_cfg.num_key_value_heads = cfg.num_attention_heads;
  LlamaWeights w = gqa.weights();
  const int hd = cfg.head_dim, group = cfg.num_attention_heads / cfg.num_key_value_heads;
  for (LayerWeights& l : w.layers) {
    Matrix k(mha_cfg.kv_dim(), cfg.hidden_size), v(mha_cfg.kv_dim(), cfg.hidden_size);
    for (int h = 0; h < cfg.num_attention_heads; ++h) {
      k.middleRows(h * hd, hd) = l.k_proj.middleRows((h / group) * hd, hd);
      v.middleRows(h * hd, hd) = l.v_proj.middleRows((h / group) * hd, hd);
    }
    l.k_proj = k;
    l.v_proj = v;
  }
  Transformer mha(mha_cfg, w);
  const auto tokens = random_tokens(10, cfg.vocab_size, kSeed + 10);
  auto c1 = gqa.new_cache(16), c2 = mha.new_cache(16);
  Matrix a = gqa.forward(*c1, ForwardRequest::chain(tokens)).logits;
  Matrix b = mha.forward(*c2, ForwardRequest::chain(tokens)).logits;
  EXPECT_TRUE(bitwise_equal(a, b));  // same products in the same order
}

TEST(Transformer, SlidingWindowEqualsExplicitMask) {
  ModelConfig windowed = fixture_configs()[0].config;
  windowed.model_type = "mistral";
  windowed.sliding_window = 3;
  ModelConfig full = windowed;
  full.sliding_window = 0;
  Transformer a = make_model(windowed, kSeed), b = make_model(full, kSeed);
  const auto tokens = random_tokens(9, windowed.vocab_size, kSeed + 11);
  ForwardRequest masked = ForwardRequest::chain(tokens);
  masked.mask = AttentionMask(9, 9);
  for (int t = 0; t < 9; ++t)
    for (int j = std::max(0, t - 2); j <= t; ++j) masked.mask->set(t, j, true);
  auto c1 = a.new_cache(16), c2 = b.new_cache(16);
  EXPECT_TRUE(bitwise_equal(a.forward(*c1, ForwardRequest::chain(tokens)).logits, b.forward(*c2, masked).logits));
}

TEST(Rope, ScalingVariantsMatchLongDoubleFormulas) {
  struct Case {
    const char* name;
    RopeScaling::Type type;
    double factor;
  };
  for (const Case& cs : {Case{"none", RopeScaling::Type::none, 1.0}, Case{"linear", RopeScaling::Type::linear, 4.0},
                         Case{"dynamic", RopeScaling::Type::dynamic, 2.0}, Case{"llama3", RopeScaling::Type::llama3, 8.0}}) {
    ModelConfig c = testing::tiny_llama();
    c.head_dim = 64;
    c.rope_theta = 500000.0;
    c.max_position_embeddings = 64;
    c.rope_scaling.type = cs.type;
    c.rope_scaling.factor = cs.factor;
    c.rope_scaling.low_freq_factor = 1.0;
    c.rope_scaling.high_freq_factor = 4.0;
    c.rope_scaling.original_max_position_embeddings = 64;
    Rope rope(c);
    std::mt19937_64 rng(kSeed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int position : {0, 1, 7, 63, 64, 100, 1000, 5000}) {
      const auto expected_f = testing::expected_inv_freq(c, position);
      const auto f = rope.inv_freq(position);
      for (int j = 0; j < 32; ++j)
        EXPECT_NEAR(f[j], static_cast<double>(expected_f[j]), 1e-15 * std::max(1.0, static_cast<double>(expected_f[j])))
            << cs.name << " position " << position << " j " << j;
      std::vector<float> x(64);
      for (float& v : x) v = u(rng);
      std::vector<long double> xl(x.begin(), x.end());
      rope.apply(x.data(), 1, position);
      testing::expected_rope(xl.data(), 64, expected_f, position);
      for (int i = 0; i < 64; ++i)
        EXPECT_NEAR(x[i], static_cast<double>(xl[i]), 2e-6) << cs.name << " position " << position << " element " << i;
    }
  }
}

TEST(TransformerErrors, ReportWhatIsWrong) {
  const auto cfg = fixture_configs()[0].config;
  Transformer model = make_model(cfg, kSeed);
  auto expect_error = [&](ForwardRequest r, int capacity, const std::string& fragment) {
    auto cache = model.new_cache(capacity);
    try {
      model.forward(*cache, r);
      ADD_FAILURE() << "no error; expected one mentioning '" << fragment << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  };
  expect_error(ForwardRequest::chain({cfg.vocab_size}), 8, "outside the vocabulary");
  expect_error(ForwardRequest::chain({}), 8, "no tokens");
  expect_error(ForwardRequest::chain({1, 2, 3}), 2, "do not fit");
  ForwardRequest bad_mask = ForwardRequest::chain({1, 2});
  bad_mask.mask = AttentionMask::causal(0, 3);
  expect_error(bad_mask, 8, "attention mask is 3x3, expected 2x2");
  ForwardRequest bad_pos = ForwardRequest::chain({1, 2});
  bad_pos.positions = {0};
  expect_error(bad_pos, 8, "1 positions given for 2 tokens");
  ForwardRequest bad_aux = ForwardRequest::chain({1});
  bad_aux.aux_layers = {cfg.num_hidden_layers + 1};
  expect_error(bad_aux, 8, "hidden-state index");

  LlamaWeights w = model.weights();
  w.layers[1].k_proj = Matrix::Zero(3, 3);
  try {
    Transformer broken(cfg, w);
    ADD_FAILURE() << "a wrongly shaped k_proj was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.layers.1.self_attn.k_proj.weight"), std::string::npos) << e.what();
  }
  EXPECT_THROW(AttentionMask::tree(0, {-1, 2, 0}), Error);  // parent after child
  auto cache = model.new_cache(8);
  EXPECT_THROW(cache->truncate(1), Error);      // more than it holds
  EXPECT_THROW(cache->gather(0, {0}), Error);   // slot not present
}

}  // namespace
}  // namespace specdec
