#pragma once
// EAGLE-1, EAGLE-3 and P-EAGLE heads and MTP modules for the head tests, shared by the reference
// suite (test_eagle_head) and the optimized backends': configs over the layouts and the features a
// head can have (fc bias, own embeddings, a draft vocabulary, Qwen3 q/k norms, norm_before_residual,
// attention biases, several layers; MTP: own LM head, MiMo's hidden-first concat, Qwen3-Next's
// several layers), on a tiny_llama target.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "tests/reference/model_fixtures.hpp"

namespace specdec::testing {

inline constexpr uint64_t kTargetSeed = 11;

inline uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// The target: tiny_llama (H = 48, L = 3, V = 97).
inline const Transformer& target() {
  static const Transformer t = make_model(tiny_llama(), kTargetSeed);
  return t;
}

inline ModelConfig head_layer(int H, int nh, int nkv, int hd, int layers) {
  ModelConfig c = testing::tiny_llama();  // vocab 97, positions, eps, bos/eos as the target's
  c.hidden_size = H;
  c.intermediate_size = 64;
  c.num_hidden_layers = layers;
  c.num_attention_heads = nh;
  c.num_key_value_heads = nkv;
  c.head_dim = hd;
  c.rope_theta = 20000.0;  // differs from the target's: the head must use its own RoPE
  return c;
}

struct Case {
  std::string name;
  EagleHeadConfig config;
  uint64_t seed;
};

// A head over target(): H = 48, V = 97; num_layers follows the layer config, as the loader sets it.
inline EagleHeadConfig head_config(EagleKind kind, const std::string& layout, ModelConfig layer, int draft_vocab) {
  EagleHeadConfig c;
  c.kind = kind;
  c.layout = layout;
  c.layer = std::move(layer);
  c.num_layers = c.layer.num_hidden_layers;
  c.target_hidden = 48;
  c.target_vocab = 97;
  c.draft_vocab = draft_vocab;
  return c;
}

inline std::vector<Case> cases() {
  std::vector<Case> out;
  {
    EagleHeadConfig c = head_config(EagleKind::eagle1, "safeailab", head_layer(48, 4, 2, 12, 1), 97);
    c.fc_bias = true;
    out.push_back({"eagle1_safeailab", c, 101});
  }
  {
    EagleHeadConfig c = head_config(EagleKind::eagle1, "safeailab", head_layer(48, 6, 6, 8, 2), 97);
    c.layer.mlp_bias = true;
    c.fc_bias = false;
    c.own_embeddings = true;
    out.push_back({"eagle1_two_layers_own_embed", c, 102});
  }
  {
    EagleHeadConfig c = head_config(EagleKind::eagle3, "safeailab", head_layer(48, 4, 2, 12, 1), 40);
    c.layer.architecture = "LlamaForCausalLMEagle3";
    out.push_back({"eagle3_safeailab", c, 103});  // aux layers: the target's default {0, 1, 2}
  }
  {
    // The head's H = 32 differs from the target's 48: it brings its own embeddings.
    EagleHeadConfig c = head_config(EagleKind::eagle3, "speculators", head_layer(32, 4, 1, 10, 2), 60);
    c.layer.model_type = "qwen3";
    c.layer.architecture = "Qwen3ForCausalLM";
    c.layer.qk_norm = true;
    c.aux_layers = {1, 3};
    c.norm_before_residual = true;
    c.own_embeddings = true;
    out.push_back({"eagle3_speculators_qwen3", c, 104});
  }
  {
    EagleHeadConfig c = head_config(EagleKind::peagle, "aws", head_layer(48, 4, 2, 12, 3), 50);
    c.own_embeddings = true;
    c.mask_token_id = 96;
    c.trained_depth = 8;
    out.push_back({"peagle_aws", c, 105});
  }
  {
    EagleHeadConfig c = head_config(EagleKind::peagle, "speculators", head_layer(48, 6, 3, 8, 2), 97);
    c.layer.attention_bias = c.layer.o_proj_bias = true;
    c.aux_layers = {0, 2, 3};
    c.own_embeddings = true;
    c.mask_token_id = 3;
    c.trained_depth = 10;
    out.push_back({"peagle_speculators_bias", c, 106});
  }
  // MTP modules: a decoder layer of the target's own shape (tiny_llama), in each layout.
  auto mtp = [](const std::string& layout, int layers) {
    ModelConfig layer = testing::tiny_llama();
    layer.num_hidden_layers = layers;
    EagleHeadConfig c = head_config(EagleKind::mtp, layout, layer, 97);
    c.target_layers = testing::tiny_llama().num_hidden_layers;
    return c;
  };
  {
    EagleHeadConfig c = mtp("deepseek", 1);
    c.own_lm_head = c.own_embeddings = true;  // DeepSeek-V3 stores copies of both
    out.push_back({"mtp_deepseek_own_head", c, 107});
  }
  out.push_back({"mtp_deepseek", mtp("deepseek", 1), 108});
  out.push_back({"mtp_qwen3_next_two_layers", mtp("qwen3_next", 2), 109});
  {
    EagleHeadConfig c = mtp("mimo", 1);
    c.hidden_first = true;  // MiMo's input_proj reads [hidden; embedding]
    out.push_back({"mtp_mimo", c, 110});
  }
  out.push_back({"mtp_speculators", mtp("speculators", 1), 111});
  return out;
}

inline EagleHead make_head(const Case& k) { return random_eagle_head(k.config, target(), k.seed, 0.08f); }

inline const Case& find_case(const std::string& name) {
  static const std::vector<Case> all = cases();
  for (const Case& k : all)
    if (k.name == name) return k;
  throw std::runtime_error("no case " + name);
}

// Random inputs for T rows; rows listed in `projected_rows` carry an H-wide state in [0, H) and
// junk beyond it.
inline EagleHead::Input random_input(const EagleHead& head, int T, uint64_t seed, const std::vector<int>& projected_rows = {}) {
  const EagleHeadConfig& c = head.config();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  EagleHead::Input in;
  in.features.resize(T, c.feature_width());
  for (int t = 0; t < T; ++t) {
    in.tokens.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(c.target_vocab)));
    for (int i = 0; i < c.feature_width(); ++i) in.features(t, i) = u(rng);
    in.logit_rows.push_back(t);
  }
  if (!projected_rows.empty()) {
    in.projected.assign(static_cast<std::size_t>(T), 0);
    for (int r : projected_rows) in.projected[static_cast<std::size_t>(r)] = 1;
  }
  return in;
}

inline EagleHead::Input one_row(const EagleHead::Input& in, int t) {
  EagleHead::Input r;
  r.tokens = {in.tokens[static_cast<std::size_t>(t)]};
  r.features = in.features.row(t);
  if (!in.projected.empty()) r.projected = {in.projected[static_cast<std::size_t>(t)]};
  r.logit_rows = {0};
  return r;
}

inline void expect_bitwise(const Matrix& a, const Matrix& b, const std::string& label) {
  ASSERT_EQ(a.rows(), b.rows()) << label;
  ASSERT_EQ(a.cols(), b.cols()) << label;
  for (Eigen::Index i = 0; i < a.size(); ++i) ASSERT_EQ(bits(a.data()[i]), bits(b.data()[i])) << label << " element " << i;
}

}  // namespace specdec::testing
