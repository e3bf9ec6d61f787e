// The cpu backend's forward: bitwise equality with the reference (logits, final and aux hidden
// states, KV cache) for F32, BF16 and F16 storage on every fixture shape; batch, thread-count and
// code-path (AVX2 vs portable) invariance; tree masks; KV truncate / gather; checkpoint loading;
// and every error a user can hit.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "optimized/cpu/dot_kernels.hpp"
#include "optimized/cpu/fused_linear.hpp"
#include "optimized/cpu/packed_matrix.hpp"
#include "reference/core/error.hpp"
#include "reference/core/half.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/ops.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/reference/batch_invariance.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/gguf_writer.hpp"
#include "tests/reference/tree_fixtures.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec {
namespace {

using testing::bitwise_equal;
using testing::cpu_cache;
using testing::cpu_fixture_configs;
using testing::cpu_precisions;
using testing::dense_cache;
using testing::error_of;
using testing::KernelPathTest;
using testing::SettingsGuard;
using testing::expect_batch_invariant;
using testing::expect_tree_equals_chains;
using testing::kTreeParents;
using testing::make_twin;
using testing::random_tokens;
using testing::tree_request;

constexpr uint64_t kSeed = 4321;

const ModelConfig& config_named(const std::string& name) {
  static const auto configs = cpu_fixture_configs();
  for (const auto& c : configs)
    if (c.name == name) return c.config;
  throw std::runtime_error("no fixture config " + name);
}

std::string where(const std::string& config, Dtype p) { return config + " / " + dtype_name(p) + ", seed " + std::to_string(kSeed); }

// --- the kernels --------------------------------------------------------------------------------

// The kernel tests run once per path (portable, avx2, avx512), each skipped where this CPU cannot run it.
class DotKernels : public KernelPathTest {};
class FusedLinear : public KernelPathTest {};
SPECDEC_INSTANTIATE_KERNEL_PATHS(DotKernels);
SPECDEC_INSTANTIATE_KERNEL_PATHS(FusedLinear);

// Every block shape, every length around the 8-wide blocks, every dtype, on each path: each
// output is ops::dot of the widened values, bitwise.
TEST_P(DotKernels, EqualReferenceDotForEveryShape) {
  std::mt19937_64 rng(kSeed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (Dtype d : cpu_precisions()) {
    for (int n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 64, 100}) {
      Matrix w(cpu::kMaxBlockRows, n), x(cpu::kMaxBlockTokens, n);
      for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng);
      for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
      const cpu::PackedMatrix packed(w, d, "w");
      const Matrix widened = round_to_precision(w, d);
      for (int R = 1; R <= cpu::kMaxBlockRows; ++R) {
        for (int TB = 1; TB <= cpu::kMaxBlockTokens; ++TB) {
          const void* rows[cpu::kMaxBlockRows];
          for (int r = 0; r < R; ++r) rows[r] = packed.row(r);
          float out[cpu::kMaxBlockRows * cpu::kMaxBlockTokens];
          cpu::dot_block(d, rows, R, x.data(), static_cast<std::size_t>(n), TB, n, out);
          for (int r = 0; r < R; ++r)
            for (int t = 0; t < TB; ++t) {
              const float expected = ops::dot(x.row(t).data(), widened.row(r).data(), n);
              EXPECT_EQ(std::bit_cast<uint32_t>(out[r * TB + t]), std::bit_cast<uint32_t>(expected))
                  << path() << ", " << dtype_name(d) << ", n " << n << ", R " << R << ", TB " << TB
                  << ", row " << r << ", token " << t << ", seed " << kSeed;
            }
        }
      }
      EXPECT_EQ(std::bit_cast<uint32_t>(cpu::dot(x.data(), widened.data(), n)),
                std::bit_cast<uint32_t>(ops::dot(x.data(), widened.data(), n)))
          << path() << ", n " << n;
    }
  }
}

// Tiles of consecutive rows: every row count, token counts on both sides of the two-token
// streaming path and up to the tile limit, lengths that span several slices of the inner
// dimension with ragged tails, with and without rows to prefetch: still ops::dot, bitwise.
TEST_P(DotKernels, TilesEqualReferenceDotForEveryShape) {
  std::mt19937_64 rng(kSeed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (Dtype d : cpu_precisions()) {
    for (int n : {1, 9, 31, 100, 520, 1100}) {
      Matrix w(2 * cpu::kMaxBlockRows, n), x(cpu::kMaxTileTokens, n);
      for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng);
      for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = normal(rng);
      const cpu::PackedMatrix packed(w, d, "w");
      const Matrix widened = round_to_precision(w, d);
      const std::size_t stride = static_cast<std::size_t>(n) * packed.element_size();
      for (int R = 1; R <= cpu::kMaxBlockRows; ++R) {
        for (int T : {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 16, 17, cpu::kMaxTileTokens}) {
          for (bool prefetch : {false, true}) {
            std::vector<float> out(static_cast<std::size_t>(R * T), -1.0f);
            cpu::dot_tile(d, packed.row(0), stride, R, x.data(), static_cast<std::size_t>(n), T, n, out.data(),
                          prefetch ? packed.row(R) : nullptr);
            for (int r = 0; r < R; ++r)
              for (int t = 0; t < T; ++t) {
                const float expected = ops::dot(x.row(t).data(), widened.row(r).data(), n);
                ASSERT_EQ(std::bit_cast<uint32_t>(out[static_cast<std::size_t>(r * T + t)]),
                          std::bit_cast<uint32_t>(expected))
                    << path() << ", " << dtype_name(d) << ", n " << n << ", R " << R << ", T " << T
                    << ", prefetch " << prefetch << ", row " << r << ", token " << t << ", seed " << kSeed;
              }
          }
        }
      }
    }
  }
}

// Attention's weighted sums of value rows for a group of heads: every width around the 8- and
// 16-lane registers, no keys (zeros), negative zeros kept as the reference's order keeps them.
TEST_P(DotKernels, WeightedSumEqualsTheAttentionOrder) {
  std::mt19937_64 rng(kSeed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int m : {1, 7, 8, 15, 16, 17, 33, 64, 65, 100, 128}) {
    for (int n : {0, 1, 5, 40}) {
      for (int G : {1, 3}) {
        std::vector<std::vector<float>> v(static_cast<std::size_t>(n), std::vector<float>(static_cast<std::size_t>(m)));
        std::vector<const float*> rows;
        for (auto& r : v) {
          for (float& x : r) x = normal(rng);
          r[0] = -0.0f;
          rows.push_back(r.data());
        }
        const std::size_t ldp = static_cast<std::size_t>(n) + 2;
        std::vector<float> p(G * ldp), scale(static_cast<std::size_t>(G));
        for (float& x : p) x = std::abs(normal(rng));
        for (float& x : scale) x = normal(rng);
        const std::size_t ldo = static_cast<std::size_t>(m) + 3;
        std::vector<float> out(G * ldo, 7.0f);
        cpu::weighted_sum(p.data(), ldp, G, rows.data(), n, m, scale.data(), out.data(), ldo);
        for (int h = 0; h < G; ++h)
          for (int d = 0; d < m; ++d) {
            float want = 0.0f;
            for (int j = 0; j < n; ++j) want += p[h * ldp + j] * rows[j][d];
            want *= scale[h];
            ASSERT_EQ(std::bit_cast<uint32_t>(out[h * ldo + d]), std::bit_cast<uint32_t>(want))
                << path() << ", m " << m << ", n " << n << ", G " << G << ", head " << h << ", element " << d
                << ", seed " << kSeed;
          }
        for (int h = 0; h < G; ++h)
          for (std::size_t d = static_cast<std::size_t>(m); d < ldo; ++d)
            ASSERT_EQ(out[h * ldo + d], 7.0f) << path() << ": wrote past the row, m " << m;
      }
    }
  }
}

// Activations at a row stride of 4 KiB (copied to a wider stride before the tiles read them),
// with the input narrower than the stride, over 1, 2, 3 and 37 tokens and with a residual to add
// into: ops::linear bitwise, on every code path.
TEST_P(FusedLinear, EqualsReferenceLinearAtAPaddedActivationStride) {
  std::mt19937_64 rng(kSeed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (Dtype d : cpu_precisions()) {
    for (int n : {1024, 1000}) {
      const std::size_t ldx = 1024;
      Matrix w(13, n);
      Vector bias(13);
      for (Eigen::Index i = 0; i < w.size(); ++i) w.data()[i] = normal(rng);
      for (Eigen::Index i = 0; i < bias.size(); ++i) bias[i] = normal(rng);
      const cpu::PackedMatrix packed(w, d, "w");
      const Matrix widened = round_to_precision(w, d);
      for (int T : {1, 2, 3, cpu::kMaxTileTokens + 5}) {
        std::vector<float> x(static_cast<std::size_t>(T) * ldx);
        for (float& v : x) v = normal(rng);
        Matrix xm(T, n), residual(T, 13);
        for (int t = 0; t < T; ++t)
          for (int i = 0; i < n; ++i) xm(t, i) = x[static_cast<std::size_t>(t) * ldx + static_cast<std::size_t>(i)];
        for (Eigen::Index i = 0; i < residual.size(); ++i) residual.data()[i] = normal(rng);
        const Matrix product = ops::linear(xm, widened, bias);
        Matrix y = residual;
        cpu::linear(packed, bias.data(), x.data(), ldx, T, y.data(), 13, true);
        for (int t = 0; t < T; ++t)
          for (int o = 0; o < 13; ++o)
            ASSERT_EQ(std::bit_cast<uint32_t>(y(t, o)), std::bit_cast<uint32_t>(residual(t, o) + product(t, o)))
                << path() << ", " << dtype_name(d) << ", n " << n << ", T " << T << ", token " << t
                << ", output " << o << ", seed " << kSeed;
      }
    }
  }
}

TEST(PackedMatrix, RoundsToNearestEvenAndWidensExactly) {
  Matrix m(1, 4);
  m << 1.0f + 1.0f / 256.0f, -3.14159f, 65504.0f, 1e-7f;
  for (Dtype d : cpu_precisions()) {
    const cpu::PackedMatrix p(m, d, "m");
    EXPECT_EQ(p.bytes(), d == Dtype::F32 ? 16u : 8u);
    std::vector<float> row(4);
    p.widen_row(0, row.data());
    for (int i = 0; i < 4; ++i) {
      const float expected = d == Dtype::F32    ? m(0, i)
                             : d == Dtype::BF16 ? bfloat16_to_float(float_to_bfloat16(m(0, i)))
                                                : half_to_float(float_to_half(m(0, i)));
      EXPECT_EQ(row[static_cast<std::size_t>(i)], expected) << dtype_name(d) << " element " << i;
    }
  }
}

// --- equality with the reference ----------------------------------------------------------------

// Forwards of 13 (prefill), 2, 4 and 37 tokens (every kernel path: the two-token stream, the
// sliced tile, and more tokens than one tile holds) with every output requested: logits, final
// hidden, aux hidden and the cache equal the reference's bitwise.
TEST(CpuTransformer, ArgmaxOnlyReturnsTheReferencesPicksInsteadOfTheRows) {
  const ModelConfig cfg = testing::tiny_llama();
  const auto twin = testing::make_twin(cfg, 99, Dtype::BF16);
  ForwardRequest r = ForwardRequest::chain(testing::random_tokens(7, cfg.vocab_size, 99));
  r.logit_rows = {6, 1};
  r.argmax_only = true;
  auto rc = twin->reference.new_cache(8);
  auto cc = twin->cpu.new_cache(8);
  const ForwardResult want = twin->reference.forward(*rc, r);
  const ForwardResult got = twin->cpu.forward(*cc, r);
  ASSERT_EQ(want.argmax.size(), 2u);
  EXPECT_EQ(got.argmax, want.argmax) << "seed 99";
  EXPECT_EQ(got.logits.rows(), 0);
}

TEST(CpuTransformer, EqualsReferenceBitwiseForEveryShapeAndPrecision) {
  for (const auto& [name, cfg] : cpu_fixture_configs()) {
    for (Dtype p : cpu_precisions()) {
      const auto twin = make_twin(cfg, kSeed, p);
      const auto a = random_tokens(13, cfg.vocab_size, kSeed + 1);
      const auto b = random_tokens(2, cfg.vocab_size, kSeed + 2);
      const auto c = random_tokens(4, cfg.vocab_size, kSeed + 16);
      const auto d = random_tokens(cpu::kMaxTileTokens + 5, cfg.vocab_size, kSeed + 17);
      auto rc = twin->reference.new_cache(64);
      auto cc = twin->cpu.new_cache(64);
      for (const auto& tokens : {a, b, c, d}) {
        ForwardRequest r = ForwardRequest::chain(tokens);
        r.final_hidden = true;
        r.aux_layers = {cfg.num_hidden_layers, 0, 2};
        const ForwardResult expected = twin->reference.forward(*rc, r);
        const ForwardResult got = twin->cpu.forward(*cc, r);
        EXPECT_TRUE(bitwise_equal(got.logits, expected.logits)) << where(name, p) << ": logits";
        EXPECT_TRUE(bitwise_equal(got.final_hidden, expected.final_hidden)) << where(name, p) << ": final hidden";
        EXPECT_TRUE(bitwise_equal(got.aux_hidden, expected.aux_hidden)) << where(name, p) << ": aux hidden";
        EXPECT_TRUE(cpu_cache(*cc).equals(dense_cache(*rc))) << where(name, p) << ": KV cache";
      }
      // The logits are not trivially equal: they vary over the vocabulary.
      auto c2 = twin->cpu.new_cache(8);
      const Matrix l = twin->cpu.forward(*c2, ForwardRequest::chain({5})).logits;
      EXPECT_GT(l.maxCoeff() - l.minCoeff(), 0.1f) << where(name, p);
    }
  }
}

// Logit rows chosen out of order and repeated, with no hidden states requested: the last layer
// then runs only for those rows, and the cache still holds every token's keys and values.
TEST(CpuTransformer, SelectedLogitRowsEqualReference) {
  for (const auto& [name, cfg] : cpu_fixture_configs()) {
    const auto twin = make_twin(cfg, kSeed, Dtype::BF16);
    const auto tokens = random_tokens(9, cfg.vocab_size, kSeed + 3);
    for (const std::vector<int>& rows : {std::vector<int>{7, 2, 7}, std::vector<int>{8}, std::vector<int>{}}) {
      auto rc = twin->reference.new_cache(16);
      auto cc = twin->cpu.new_cache(16);
      ForwardRequest r;
      r.tokens = tokens;
      r.logit_rows = rows;
      r.aux_layers = {1};
      const ForwardResult expected = twin->reference.forward(*rc, r);
      const ForwardResult got = twin->cpu.forward(*cc, r);
      EXPECT_TRUE(bitwise_equal(got.logits, expected.logits)) << name << ", " << rows.size() << " rows";
      EXPECT_TRUE(bitwise_equal(got.aux_hidden, expected.aux_hidden)) << name;
      EXPECT_TRUE(cpu_cache(*cc).equals(dense_cache(*rc))) << name << ": KV cache";
      // The next token sees every cached entry of the last layer.
      const ForwardRequest next = ForwardRequest::chain({3});
      EXPECT_TRUE(bitwise_equal(twin->cpu.forward(*cc, next).logits, twin->reference.forward(*rc, next).logits)) << name;
    }
  }
}

// A checkpoint stored in each precision loads with that precision and computes bitwise what the
// reference loaded from the same files computes.
TEST(CpuTransformer, LoadedCheckpointKeepsPrecisionAndEqualsReference) {
  const ModelConfig cfg = config_named("llama_gqa_untied");
  const LlamaWeights w = testing::make_model(cfg, kSeed).weights();
  testing::ScratchDir dir("cpu-load");
  for (Dtype p : cpu_precisions()) {
    const auto path = dir / dtype_name(p);
    save_llama_checkpoint(path, cfg, w, p, p == Dtype::F16 ? 20000 : 0);  // F16 sharded
    EXPECT_EQ(cpu::stored_precision(path), p);
    const auto model = cpu::load_cpu_transformer(path);
    EXPECT_EQ(model->precision(), p);
    LlamaModel loaded = load_llama_checkpoint(path);
    const Transformer reference(loaded.config, loaded.weights);
    const auto tokens = random_tokens(6, cfg.vocab_size, kSeed + 4);
    auto rc = reference.new_cache(8);
    auto cc = model->new_cache(8);
    EXPECT_TRUE(bitwise_equal(model->forward(*cc, ForwardRequest::chain(tokens)).logits,
                              reference.forward(*rc, ForwardRequest::chain(tokens)).logits))
        << dtype_name(p);
  }
  EXPECT_THROW(cpu::load_cpu_transformer(dir / "missing"), Error);
  // An F32 checkpoint run in BF16 equals the reference given the rounded weights.
  const auto bf16 = cpu::load_cpu_transformer(dir / "F32", Dtype::BF16);
  EXPECT_EQ(bf16->precision(), Dtype::BF16);
  const Transformer rounded(cfg, cpu::rounded_llama_weights(w, Dtype::BF16));
  const auto tokens = random_tokens(5, cfg.vocab_size, kSeed + 14);
  auto rc = rounded.new_cache(8);
  auto cc = bf16->new_cache(8);
  EXPECT_TRUE(bitwise_equal(bf16->forward(*cc, ForwardRequest::chain(tokens)).logits,
                            rounded.forward(*rc, ForwardRequest::chain(tokens)).logits));
  EXPECT_CONTAINS(error_of([&] { cpu::load_cpu_transformer(dir / "F32", Dtype::F64); }), "unsupported weight precision F64");
}

// A GGUF file (llama.cpp's q/k row order; F32, BF16 or Q8_0) loads straight into the packed model,
// in its stored precision, and computes bitwise what the reference loaded from it computes.
TEST(CpuTransformer, GgufFilesLoadInTheirPrecisionAndEqualReference) {
  const LlamaModel target = load_llama_checkpoint(std::string(SPECDEC_SOURCE_DIR) + "/models/target");
  testing::ScratchDir dir("cpu-gguf");
  for (const auto& [storage, precision] : {std::pair{testing::GgufStorage::f32, Dtype::F32},
                                           std::pair{testing::GgufStorage::bf16, Dtype::BF16},
                                           std::pair{testing::GgufStorage::q8_0, Dtype::F32}}) {
    const auto path = dir / (dtype_name(precision) + std::to_string(static_cast<int>(storage)) + ".gguf");
    testing::write_gguf_model(path, target, "llama", storage);
    const auto model = cpu::load_cpu_transformer(path);
    EXPECT_EQ(model->precision(), precision) << path;
    const LlamaModel loaded = load_llama_checkpoint(path);
    const Transformer reference(loaded.config, loaded.weights);
    const auto tokens = random_tokens(7, loaded.config.vocab_size, kSeed + 6);
    auto rc = reference.new_cache(8);
    auto cc = model->new_cache(8);
    EXPECT_TRUE(bitwise_equal(model->forward(*cc, ForwardRequest::chain(tokens)).logits,
                              reference.forward(*rc, ForwardRequest::chain(tokens)).logits))
        << path << ", seed " << kSeed + 6;
  }
}

// The precision is really used: narrower storage changes the logits a little, not a lot.
TEST(CpuTransformer, NarrowPrecisionsRoundTheWeights) {
  const ModelConfig cfg = config_named("llama_gqa_untied");
  const LlamaWeights w = testing::make_model(cfg, kSeed).weights();
  const auto tokens = random_tokens(6, cfg.vocab_size, kSeed + 15);
  auto logits = [&](Dtype p) {
    const cpu::CpuTransformer m(cfg, w, p);
    auto cache = m.new_cache(8);
    return m.forward(*cache, ForwardRequest::chain(tokens)).logits;
  };
  const Matrix f32 = logits(Dtype::F32);
  const float range = f32.maxCoeff() - f32.minCoeff();
  for (Dtype p : {Dtype::BF16, Dtype::F16}) {
    const Matrix narrow = logits(p);
    EXPECT_FALSE(bitwise_equal(narrow, f32)) << dtype_name(p);
    EXPECT_LT((narrow - f32).cwiseAbs().maxCoeff(), 0.05f * range) << dtype_name(p) << ", seed " << kSeed;
  }
}

TEST(CpuTransformer, WeightBytesPerStepCountsStoredBytes) {
  for (const auto& [name, cfg] : cpu_fixture_configs()) {
    for (Dtype p : cpu_precisions()) {
      const auto twin = make_twin(cfg, kSeed, p);
      const std::size_t e = p == Dtype::F32 ? 4 : 2;
      const std::size_t H = cfg.hidden_size, I = cfg.intermediate_size, V = cfg.vocab_size, L = cfg.num_hidden_layers;
      const std::size_t q = cfg.q_dim(), kv = cfg.kv_dim(), hd = cfg.head_dim;
      std::size_t floats = L * 2 * H + H;  // norms, kept fp32
      if (cfg.attention_bias) floats += L * (q + 2 * kv);
      if (cfg.o_proj_bias) floats += L * H;
      if (cfg.mlp_bias) floats += L * (2 * I + H);
      if (cfg.qk_norm) floats += L * 2 * hd;
      const std::size_t packed = L * ((q + 2 * kv) * H + H * q + 3 * H * I) + V * H + H;  // + one embedding row
      EXPECT_EQ(twin->cpu.weight_bytes_per_step(), packed * e + floats * 4) << where(name, p);
    }
  }
}

// --- invariances --------------------------------------------------------------------------------

// A T-token forward equals T one-token forwards and uneven chunks, bitwise.
TEST(CpuTransformer, BatchInvariant) {
  for (const auto& [name, cfg] : cpu_fixture_configs()) {
    const auto twin = make_twin(cfg, kSeed, Dtype::BF16);
    expect_batch_invariant(twin->cpu, random_tokens(13, cfg.vocab_size, kSeed + 5), name,
                           [](const KVCache& a, const KVCache& b) { return cpu_cache(a).equals(cpu_cache(b)); });
  }
}

// On each kernel path, 1, 2 and 3 threads with every loop threaded (threshold 0): the reference's
// logits and hidden states bitwise, and the same KV cache at every thread count.
class CpuTransformerPaths : public KernelPathTest {};
SPECDEC_INSTANTIATE_KERNEL_PATHS(CpuTransformerPaths);

TEST_P(CpuTransformerPaths, EqualReferenceAtEveryThreadCount) {
  ops::set_parallel_work_threshold(0);
  const auto configs = cpu_fixture_configs();
  for (std::size_t ci = 0; ci < configs.size(); ++ci) {
    const auto& [name, cfg] = configs[ci];
    // Precisions alternate over the configs: oversubscribed threads make every run slow.
    const Dtype p = cpu_precisions()[ci % cpu_precisions().size()];
    const auto twin = make_twin(cfg, kSeed, p);
    const auto tokens = random_tokens(9, cfg.vocab_size, kSeed + 6);
    const auto run = [&](LanguageModel& model, std::unique_ptr<KVCache>& cache) {
      cache = model.new_cache(16);
      model.forward(*cache, ForwardRequest::chain({tokens.begin(), tokens.begin() + 2}));
      ForwardRequest r = ForwardRequest::chain({tokens.begin() + 2, tokens.end()});
      r.final_hidden = true;
      r.aux_layers = {1};
      return model.forward(*cache, r);
    };
    std::unique_ptr<KVCache> ref_cache, first_cache;
    const ForwardResult want = run(twin->reference, ref_cache);
    for (int threads : {1, 2, 3}) {
      ops::set_num_threads(threads);
      std::unique_ptr<KVCache> cache;
      const ForwardResult out = run(twin->cpu, cache);
      const std::string w = where(name, p) + ", " + path() + ", threads " + std::to_string(threads);
      EXPECT_TRUE(bitwise_equal(out.logits, want.logits)) << w;
      EXPECT_TRUE(bitwise_equal(out.final_hidden, want.final_hidden)) << w;
      EXPECT_TRUE(bitwise_equal(out.aux_hidden, want.aux_hidden)) << w;
      if (threads == 1) {
        first_cache = std::move(cache);
      } else {
        EXPECT_TRUE(cpu_cache(*cache).equals(cpu_cache(*first_cache))) << w;
      }
    }
  }
}

// --- masks and the cache ------------------------------------------------------------------------

TEST(CpuTransformer, TreeMaskEqualsChainForEveryPath) {
  for (const auto& [name, cfg] : cpu_fixture_configs()) {
    const auto twin = make_twin(cfg, kSeed, Dtype::F16);
    const auto prefix = random_tokens(6, cfg.vocab_size, kSeed + 7);
    const auto nodes = random_tokens(static_cast<int>(kTreeParents.size()), cfg.vocab_size, kSeed + 8);
    const Matrix tree_logits =
        expect_tree_equals_chains(twin->cpu, prefix, nodes, name, [](const KVCache& a, const KVCache& b) {
          return cpu_cache(a).equals(cpu_cache(b));
        });
    // The same tree on the reference.
    auto ref_cache = twin->reference.new_cache(32);
    twin->reference.forward(*ref_cache, ForwardRequest::chain(prefix));
    const ForwardRequest tree = tree_request(nodes, static_cast<int>(prefix.size()));
    EXPECT_TRUE(bitwise_equal(tree_logits, twin->reference.forward(*ref_cache, tree).logits)) << name;
  }
}

TEST(CpuTransformer, SlidingWindowEqualsExplicitMask) {
  ModelConfig windowed = config_named("mistral_sliding_window");
  ASSERT_EQ(windowed.sliding_window, 3);
  ModelConfig full = windowed;
  full.sliding_window = 0;
  const LlamaWeights w = testing::make_model(windowed, kSeed).weights();
  const cpu::CpuTransformer a(windowed, w), b(full, w);
  const auto tokens = random_tokens(9, windowed.vocab_size, kSeed + 9);
  ForwardRequest masked = ForwardRequest::chain(tokens);
  masked.mask = AttentionMask(9, 9);
  for (int t = 0; t < 9; ++t)
    for (int j = std::max(0, t - 2); j <= t; ++j) masked.mask->set(t, j, true);
  auto c1 = a.new_cache(16), c2 = b.new_cache(16);
  const Matrix windowed_logits = a.forward(*c1, ForwardRequest::chain(tokens)).logits;
  EXPECT_TRUE(bitwise_equal(windowed_logits, b.forward(*c2, masked).logits));
  auto c3 = b.new_cache(16);
  EXPECT_FALSE(bitwise_equal(windowed_logits, b.forward(*c3, ForwardRequest::chain(tokens)).logits))
      << "the window made no difference: the test would not see a missing window";
}

TEST(CpuKVCache, TruncateThenContinueEqualsFreshRun) {
  const ModelConfig cfg = config_named("llama_gqa_untied");
  const auto twin = make_twin(cfg, kSeed, Dtype::F32);
  const cpu::CpuTransformer& model = twin->cpu;
  const auto a = random_tokens(8, cfg.vocab_size, kSeed + 10);
  const auto b = random_tokens(3, cfg.vocab_size, kSeed + 11);
  auto cache = model.new_cache(32);
  model.forward(*cache, ForwardRequest::chain(a));
  model.forward(*cache, ForwardRequest::chain(random_tokens(4, cfg.vocab_size, kSeed + 12)));  // rejected drafts
  cache->truncate(8);
  const Matrix continued = model.forward(*cache, ForwardRequest::chain(b)).logits;
  std::vector<int32_t> ab = a;
  ab.insert(ab.end(), b.begin(), b.end());
  auto fresh = model.new_cache(32);
  const Matrix reference = model.forward(*fresh, ForwardRequest::chain(ab)).logits;
  EXPECT_TRUE(bitwise_equal(continued, reference.bottomRows(3)));
  EXPECT_TRUE(cpu_cache(*cache).equals(cpu_cache(*fresh)));
}

// gather in any order (ascending: moved in place; otherwise through a copy) does what the
// reference cache's gather does.
TEST(CpuKVCache, GatherMatchesReferenceCache) {
  const ModelConfig cfg = config_named("llama_gqa_untied");
  const auto twin = make_twin(cfg, kSeed, Dtype::BF16);
  const auto tokens = random_tokens(10, cfg.vocab_size, kSeed + 13);
  for (const std::vector<int>& slots : {std::vector<int>{3, 5, 9}, std::vector<int>{9, 4, 6, 3}, std::vector<int>{3, 4},
                                        std::vector<int>{}, std::vector<int>{8, 7, 6, 5, 4, 3}}) {
    auto rc = twin->reference.new_cache(16);
    auto cc = twin->cpu.new_cache(16);
    twin->reference.forward(*rc, ForwardRequest::chain(tokens));
    twin->cpu.forward(*cc, ForwardRequest::chain(tokens));
    rc->gather(3, slots);
    cc->gather(3, slots);
    EXPECT_EQ(cc->length(), 3 + static_cast<int>(slots.size()));
    EXPECT_TRUE(cpu_cache(*cc).equals(dense_cache(*rc))) << "gather of " << slots.size() << " slots";
  }
  auto cc = twin->cpu.new_cache(16);
  twin->cpu.forward(*cc, ForwardRequest::chain(tokens));
  EXPECT_THROW(cc->gather(3, {2}), Error);       // before start
  EXPECT_THROW(cc->gather(3, {4, 4}), Error);    // repeated
  EXPECT_THROW(cc->gather(3, {10}), Error);      // beyond the length
  EXPECT_THROW(cc->gather(11, {}), Error);       // start beyond the length
  EXPECT_THROW(cc->truncate(11), Error);
  EXPECT_THROW(cc->truncate(-1), Error);
  EXPECT_EQ(cc->length(), 10);  // failed calls changed nothing
  EXPECT_THROW(cpu::CpuKVCache(1, 8, 0), Error);
}

// --- errors -------------------------------------------------------------------------------------

TEST(CpuTransformerErrors, ReportWhatIsWrong) {
  const ModelConfig cfg = config_named("llama_gqa_untied");
  const auto twin = make_twin(cfg, kSeed, Dtype::F32);
  const cpu::CpuTransformer& model = twin->cpu;
  auto error_for = [&](ForwardRequest r, int capacity) {
    auto cache = model.new_cache(capacity);
    const std::string e = error_of([&] { model.forward(*cache, r); });
    EXPECT_EQ(cache->length(), 0) << "a failed forward left entries in the cache: " << e;
    return e;
  };
  EXPECT_CONTAINS(error_for(ForwardRequest::chain({cfg.vocab_size}), 8), "outside the vocabulary");
  EXPECT_CONTAINS(error_for(ForwardRequest::chain({-1}), 8), "outside the vocabulary");
  EXPECT_CONTAINS(error_for(ForwardRequest::chain({}), 8), "no tokens");
  EXPECT_CONTAINS(error_for(ForwardRequest::chain({1, 2, 3}), 2), "do not fit");
  ForwardRequest bad_mask = ForwardRequest::chain({1, 2});
  bad_mask.mask = AttentionMask::causal(0, 3);
  EXPECT_CONTAINS(error_for(bad_mask, 8), "attention mask is 3x3, expected 2x2");
  ForwardRequest bad_pos = ForwardRequest::chain({1, 2});
  bad_pos.positions = {0};
  EXPECT_CONTAINS(error_for(bad_pos, 8), "1 positions given for 2 tokens");
  bad_pos.positions = {0, -3};
  EXPECT_CONTAINS(error_for(bad_pos, 8), "negative position");
  ForwardRequest bad_aux = ForwardRequest::chain({1});
  bad_aux.aux_layers = {cfg.num_hidden_layers + 1};
  EXPECT_CONTAINS(error_for(bad_aux, 8), "hidden-state index");
  ForwardRequest bad_row = ForwardRequest::chain({1});
  bad_row.logit_rows = {1};
  EXPECT_CONTAINS(error_for(bad_row, 8), "logit row 1 outside [0, 1)");

  // A cache of another backend, or of a model of another shape, is refused in both directions.
  auto reference_cache = twin->reference.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { model.forward(*reference_cache, ForwardRequest::chain({1})); }), "not created by the cpu backend");
  auto cpu_cache_for_reference = model.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { twin->reference.forward(*cpu_cache_for_reference, ForwardRequest::chain({1})); }),
                  "not created by the reference backend");
  ModelConfig other = cfg;
  other.num_hidden_layers = 2;
  const auto other_model = make_twin(other, kSeed, Dtype::F32);
  auto other_cache = other_model->cpu.new_cache(8);
  EXPECT_CONTAINS(error_of([&] { model.forward(*other_cache, ForwardRequest::chain({1})); }), "has 2 layers");

  // Capacity overflow on a later forward leaves the cache as it was.
  auto cache = model.new_cache(4);
  model.forward(*cache, ForwardRequest::chain({1, 2, 3}));
  EXPECT_CONTAINS(error_of([&] { model.forward(*cache, ForwardRequest::chain({4, 5})); }), "do not fit");
  EXPECT_EQ(cache->length(), 3);

  // Construction: precision, weight shapes, F16 range.
  const LlamaWeights w = testing::make_model(cfg, kSeed).weights();
  for (Dtype bad : {Dtype::F64, Dtype::I32, Dtype::F8_E4M3}) {
    EXPECT_CONTAINS(error_of([&] { cpu::CpuTransformer m(cfg, w, bad); }), "unsupported weight precision " + dtype_name(bad));
  }
  EXPECT_THROW(cpu::rounded_llama_weights(w, Dtype::F64), Error);
  LlamaWeights broken = w;
  broken.layers[1].k_proj = Matrix::Zero(3, 3);
  EXPECT_CONTAINS(error_of([&] { cpu::CpuTransformer m(cfg, broken); }), "model.layers.1.self_attn.k_proj.weight");
  LlamaWeights huge = w;
  huge.layers[2].down_proj(0, 1) = 1e6f;
  EXPECT_CONTAINS(error_of([&] { cpu::CpuTransformer m(cfg, huge, Dtype::F16); }), "model.layers.2.mlp.down_proj.weight");
  EXPECT_NO_THROW(cpu::CpuTransformer(cfg, huge, Dtype::BF16));
  ModelConfig invalid = cfg;
  invalid.num_key_value_heads = 4;  // does not divide 6 heads
  EXPECT_THROW(cpu::CpuTransformer(invalid, w), Error);
}

}  // namespace
}  // namespace specdec
