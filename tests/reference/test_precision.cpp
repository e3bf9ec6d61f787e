// Weights rounded to their stored precision: round_to_precision on values, buffers and matrices,
// and round_weights over every tensor of a model (matrices, norms, biases, q/k norms).
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstdint>
#include <string>

#include "reference/core/error.hpp"
#include "reference/core/half.hpp"
#include "reference/model/precision.hpp"
#include "reference/model/random_weights.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/model_fixtures.hpp"

namespace specdec {
namespace {

using testing::error_of;

constexpr uint64_t kSeed = 11;

// The narrow value as half.hpp's conversions give it, widened back.
float narrow(float v, Dtype p) {
  return p == Dtype::BF16 ? bfloat16_to_float(float_to_bfloat16(v)) : half_to_float(float_to_half(v));
}

TEST(Precision, RoundsToNearestEvenAndKeepsF32) {
  EXPECT_EQ(round_to_precision(1.0f + 1.0f / 256.0f, Dtype::BF16), 1.0f);            // tie: to even
  EXPECT_EQ(round_to_precision(1.0f + 3.0f / 256.0f, Dtype::BF16), 1.0f + 1.0f / 64.0f);  // tie: up to even
  EXPECT_EQ(round_to_precision(1.0f + 1.0f / 2048.0f, Dtype::F16), 1.0f);
  EXPECT_EQ(round_to_precision(1e6f, Dtype::F16), INFINITY) << "beyond the F16 range";
  const float odd = std::bit_cast<float>(0x3f800001u);
  EXPECT_EQ(round_to_precision(odd, Dtype::F32), odd);
  Matrix m(3, 5);
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = 0.1f * static_cast<float>(i) - 0.7f;
  for (Dtype p : {Dtype::BF16, Dtype::F16}) {
    const Matrix r = round_to_precision(m, p);
    for (Eigen::Index i = 0; i < m.size(); ++i)
      ASSERT_EQ(r.data()[i], narrow(m.data()[i], p)) << dtype_name(p) << " element " << i;
  }
}

// Every tensor of two models that between them have every kind of tensor (a Llama with attention,
// o_proj and MLP biases and an untied LM head; a Qwen3 with q/k norms) is rounded element by
// element; F32 keeps every bit; other dtypes are refused by name.
TEST(Precision, RoundWeightsRoundsEveryTensor) {
  ModelConfig biased = testing::tiny_llama();
  biased.attention_bias = biased.o_proj_bias = biased.mlp_bias = true;
  ModelConfig qwen3 = testing::fixture_configs()[3].config;
  ASSERT_TRUE(qwen3.qk_norm);
  std::array<bool, 11> vector_seen{};
  for (const ModelConfig& c : {biased, qwen3}) {
    const LlamaWeights w = random_llama_weights(c, kSeed, 0.08f);
    for (Dtype p : {Dtype::BF16, Dtype::F16}) {
      const LlamaWeights r = round_weights(w, p);
      int changed = 0;
      auto check = [&](const auto& want, const auto& got, const std::string& name) {
        ASSERT_EQ(got.size(), want.size()) << name;
        for (Eigen::Index i = 0; i < want.size(); ++i) {
          ASSERT_EQ(got.data()[i], narrow(want.data()[i], p))
              << c.model_type << ", " << dtype_name(p) << ", " << name << " element " << i << ", seed " << kSeed;
          changed += got.data()[i] != want.data()[i];
        }
      };
      check(w.embed_tokens, r.embed_tokens, "embed_tokens");
      check(w.norm, r.norm, "norm");
      check(w.lm_head, r.lm_head, "lm_head");
      for (std::size_t l = 0; l < w.layers.size(); ++l) {
        const std::string layer = "layer " + std::to_string(l);
        const auto wm = layer_matrices(w.layers[l]), rm = layer_matrices(r.layers[l]);
        for (std::size_t k = 0; k < wm.size(); ++k) check(*wm[k], *rm[k], layer + " matrix " + std::to_string(k));
        const auto wv = layer_vectors(w.layers[l]), rv = layer_vectors(r.layers[l]);
        for (std::size_t k = 0; k < wv.size(); ++k) {
          check(*wv[k], *rv[k], layer + " vector " + std::to_string(k));
          vector_seen[k] = vector_seen[k] || wv[k]->size() > 0;
        }
      }
      EXPECT_GT(changed, 0) << c.model_type << ", " << dtype_name(p) << ": random fp32 weights are not all representable";
    }
    const LlamaWeights same = round_weights(w, Dtype::F32);
    EXPECT_TRUE(same.embed_tokens.cwiseEqual(w.embed_tokens).all() && same.norm.cwiseEqual(w.norm).all())
        << "F32 keeps the weights as they are";
  }
  for (std::size_t k = 0; k < vector_seen.size(); ++k) EXPECT_TRUE(vector_seen[k]) << "no fixture has layer vector " << k;
  const LlamaWeights w = random_llama_weights(biased, kSeed, 0.08f);
  EXPECT_CONTAINS(error_of([&] { round_weights(w, Dtype::I32); }), "round_weights: unsupported weight precision I32");
  EXPECT_CONTAINS(error_of([&] { check_weight_precision(Dtype::F64, "here"); }),
                  "here: unsupported weight precision F64; expected F32, BF16 or F16");
}

}  // namespace
}  // namespace specdec
