// EAGLE-1, EAGLE-3 and P-EAGLE heads: save/load round trips in every layout, the forward against
// an independent long-double forward, batch invariance (incl. projected rows), the d2t mapping,
// and every error a user's head checkpoint or call can cause.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/core/half.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "reference/drafters/eagle_tensors.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/io/tensor_store.hpp"
#include "reference/model/ops.hpp"
#include "tests/drafters/checkpoint_edit.hpp"
#include "tests/drafters/eagle_head_cases.hpp"
#include "tests/drafters/naive_eagle.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/model_fixtures.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "tests/reference/weight_pairs.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::error_of;
using testing::ScratchDir;
using testing::bits;
using testing::Case;
using testing::cases;
using testing::expect_bitwise;
using testing::find_case;
using testing::head_layer;
using testing::make_head;
using testing::one_row;
using testing::random_input;
using testing::target;
using testing::StoredTensor;
using testing::edit_config;
using testing::edit_tensors;
using testing::remove_tensor;
using testing::tensor;
using testing::read_tensors;
using testing::write_tensors;

// Expects `loaded` to equal `saved` after each element went through `round` (identity for F32).
template <typename Round>
void expect_weights_equal(const EagleWeights& saved, const EagleWeights& loaded, Round round, const std::string& label) {
  auto f = testing::equal_after(round, label);
  testing::visit_pair("fc", saved.fc, loaded.fc, f);
  testing::visit_pair("fc_bias", saved.fc_bias, loaded.fc_bias, f);
  testing::visit_pair("hidden_norm", saved.hidden_norm, loaded.hidden_norm, f);
  ASSERT_EQ(saved.layers.size(), loaded.layers.size());
  for (std::size_t i = 0; i < saved.layers.size(); ++i)
    testing::for_each_layer_pair(saved.layers[i], loaded.layers[i], "layer " + std::to_string(i) + " ", f);
  testing::visit_pair("norm", saved.norm, loaded.norm, f);
  testing::visit_pair("lm_head", saved.lm_head, loaded.lm_head, f);
  testing::visit_pair("embed_tokens", saved.embed_tokens, loaded.embed_tokens, f);
  testing::visit_pair("mask_hidden", saved.mask_hidden, loaded.mask_hidden, f);
  EXPECT_EQ(saved.d2t, loaded.d2t) << label;
  EXPECT_EQ(saved.t2d, loaded.t2d) << label;
}

float identity(float x) { return x; }
float via_bf16(float x) { return bfloat16_to_float(float_to_bfloat16(x)); }

// A saved copy of a case's head in a fresh directory.
struct SavedHead {
  ScratchDir scratch{"eagle"};
  fs::path dir;
  explicit SavedHead(const std::string& case_name) : dir(scratch / "head") {
    save_eagle_head(dir, make_head(find_case(case_name)), Dtype::F32);
  }
};

// --- round trips --------------------------------------------------------------------------------

TEST(EagleCheckpoint, RoundTripF32IsExactInEveryLayout) {
  for (const Case& k : cases()) {
    const std::string label = k.name + " (seed " + std::to_string(k.seed) + ")";
    const EagleHead head = make_head(k);
    ScratchDir scratch("eagle-rt");
    save_eagle_head(scratch / "head", head, Dtype::F32);
    const EagleHead loaded = load_eagle_head(scratch / "head", target());
    EXPECT_TRUE(loaded.config() == head.config()) << label;
    EXPECT_EQ(loaded.config().layout, k.config.layout) << label;
    EXPECT_EQ(loaded.config().kind, k.config.kind) << label;
    expect_weights_equal(head.weights(), loaded.weights(), identity, label);
    // And the loaded head computes bitwise the same.
    const EagleHead::Input in = random_input(head, 4, 7);
    auto c1 = head.new_cache(8), c2 = loaded.new_cache(8);
    const EagleHead::Output a = head.forward(*c1, in), b = loaded.forward(*c2, in);
    expect_bitwise(a.logits, b.logits, label + " logits");
    expect_bitwise(a.hidden, b.hidden, label + " hidden");
    // Only the two files are written, nothing temporary is left behind.
    EXPECT_EQ(ScratchDir::entries_of(scratch / "head"), (std::vector<std::string>{"config.json", "model.safetensors"}))
        << label;
    EXPECT_EQ(scratch.entries(), std::vector<std::string>{"head"}) << label;
  }
}

TEST(EagleCheckpoint, RoundTripBF16RoundsEveryFloat) {
  for (const Case& k : cases()) {
    const std::string label = k.name + " (seed " + std::to_string(k.seed) + ")";
    const EagleHead head = make_head(k);
    ScratchDir scratch("eagle-bf16");
    save_eagle_head(scratch / "head", head, Dtype::BF16);
    const EagleHead loaded = load_eagle_head(scratch / "head", target());
    EagleHeadConfig expected = head.config();
    expected.layer.torch_dtype = "bfloat16";
    EXPECT_TRUE(loaded.config() == expected) << label;
    expect_weights_equal(head.weights(), loaded.weights(), via_bf16, label);
    const TensorStore store(scratch / "head");
    EXPECT_EQ(store.info(k.config.kind == EagleKind::mtp ? mtp_names(k.config).fc : "fc.weight").dtype, Dtype::BF16) << label;
    if (store.has("d2t")) {
      EXPECT_EQ(store.info("d2t").dtype, Dtype::I64) << label;
      EXPECT_EQ(store.info("t2d").dtype, Dtype::BOOL) << label;
    }
  }
}

TEST(EagleCheckpoint, SavedFilesUseEachLayoutsNamesAndConfigKeys) {
  const int H = 48, Ht = 48;
  {
    SavedHead s("eagle1_safeailab");
    const TensorStore store(s.dir);
    EXPECT_EQ(store.info("fc.weight").shape, (std::vector<int64_t>{H, 2 * H}));
    EXPECT_TRUE(store.has("fc.bias"));
    EXPECT_TRUE(store.has("layers.0.self_attn.q_proj.weight"));
    EXPECT_FALSE(store.has("layers.0.input_layernorm.weight"));  // deliberately absent in EAGLE-1
    EXPECT_FALSE(store.has("lm_head.weight"));
    EXPECT_FALSE(store.has("norm.weight"));
    EXPECT_FALSE(store.has("embed_tokens.weight"));
    const json j = json::parse(testing::read_text(s.dir / "config.json"));
    EXPECT_EQ(j.at("bias"), true);
    EXPECT_EQ(j.at("num_hidden_layers"), 1);
  }
  {
    SavedHead s("eagle3_safeailab");
    const TensorStore store(s.dir);
    EXPECT_EQ(store.info("fc.weight").shape, (std::vector<int64_t>{H, 3 * Ht}));
    EXPECT_EQ(store.info("midlayer.self_attn.q_proj.weight").shape, (std::vector<int64_t>{48, 2 * H}));
    EXPECT_TRUE(store.has("midlayer.hidden_norm.weight"));
    EXPECT_TRUE(store.has("midlayer.input_layernorm.weight"));
    EXPECT_EQ(store.info("lm_head.weight").shape, (std::vector<int64_t>{40, H}));
    EXPECT_EQ(store.info("d2t").shape, (std::vector<int64_t>{40}));
    EXPECT_EQ(store.info("t2d").shape, (std::vector<int64_t>{97}));
    EXPECT_FALSE(store.has("embed_tokens.weight"));
    EXPECT_FALSE(store.has("fc.bias"));
    const json j = json::parse(testing::read_text(s.dir / "config.json"));
    EXPECT_EQ(j.at("draft_vocab_size"), 40);
    EXPECT_EQ(j.at("architectures").at(0), "LlamaForCausalLMEagle3");
    EXPECT_FALSE(j.contains("eagle_aux_hidden_state_layer_ids"));  // the default: left implicit
  }
  {
    SavedHead s("eagle3_speculators_qwen3");
    const TensorStore store(s.dir);
    EXPECT_TRUE(store.has("layers.0.hidden_norm.weight"));
    EXPECT_TRUE(store.has("layers.1.input_layernorm.weight"));
    EXPECT_TRUE(store.has("layers.0.self_attn.q_norm.weight"));
    EXPECT_FALSE(store.has("midlayer.hidden_norm.weight"));
    EXPECT_EQ(store.info("fc.weight").shape, (std::vector<int64_t>{32, 2 * Ht}));
    EXPECT_EQ(store.info("embed_tokens.weight").shape, (std::vector<int64_t>{97, 32}));
    const json j = json::parse(testing::read_text(s.dir / "config.json"));
    EXPECT_EQ(j.at("speculators_model_type"), "eagle3");
    EXPECT_EQ(j.at("architectures").at(0), "Eagle3Speculator");
    EXPECT_EQ(j.at("transformer_layer_config").at("model_type"), "qwen3");
    EXPECT_EQ(j.at("eagle_aux_hidden_state_layer_ids"), json::array({1, 3}));
    EXPECT_EQ(j.at("norm_before_residual"), true);
    EXPECT_EQ(j.at("target_hidden_size"), 48);
    EXPECT_EQ(j.at("speculators_config").at("verifier").at("architectures").at(0), "LlamaForCausalLM");
  }
  {
    SavedHead s("peagle_aws");
    const TensorStore store(s.dir);
    EXPECT_EQ(store.info("mask_hidden").shape, (std::vector<int64_t>{1, 3 * Ht}));
    EXPECT_TRUE(store.has("midlayer.hidden_norm.weight"));
    EXPECT_TRUE(store.has("layers.1.input_layernorm.weight"));
    EXPECT_TRUE(store.has("layers.2.mlp.down_proj.weight"));
    EXPECT_FALSE(store.has("layers.0.self_attn.q_proj.weight"));
    EXPECT_TRUE(store.has("embed_tokens.weight"));
    const json j = json::parse(testing::read_text(s.dir / "config.json"));
    EXPECT_EQ(j.at("ptd_token_id"), 96);
    EXPECT_EQ(j.at("num_hidden_layers"), 3);
    EXPECT_EQ(j.at("draft_vocab_size"), 50);
  }
  {
    SavedHead s("peagle_speculators_bias");
    const TensorStore store(s.dir);
    EXPECT_EQ(store.info("mask_hidden").shape, (std::vector<int64_t>{1, 1, 3 * Ht}));
    EXPECT_TRUE(store.has("layers.0.self_attn.q_proj.bias"));
    EXPECT_TRUE(store.has("layers.0.self_attn.o_proj.bias"));
    EXPECT_FALSE(store.has("d2t"));  // V = Vd
    const json j = json::parse(testing::read_text(s.dir / "config.json"));
    EXPECT_EQ(j.at("speculators_model_type"), "peagle");
    EXPECT_EQ(j.at("mask_token_id"), 3);
    EXPECT_EQ(j.at("speculators_config").at("proposal_methods").at(0).at("speculative_tokens"), 10);
  }
}

TEST(EagleCheckpoint, ReadsReleasedConfigVariants) {
  // SafeAILab EAGLE-3 configs carry no rope_theta (-> 10000) and may omit target_hidden_size.
  {
    SavedHead s("eagle3_safeailab");
    edit_config(s.dir, [](json& j) {
      j.erase("rope_theta");
      j.erase("target_hidden_size");
    });
    const EagleHead h = load_eagle_head(s.dir, target());
    EXPECT_EQ(h.config().layer.rope_theta, 10000.0);
    EXPECT_EQ(h.config().target_hidden, 48);
    EXPECT_EQ(h.config().aux_layers, (std::vector<int>{0, 1, 2}));
  }
  // EAGLE-1 without 'bias' defaults to an fc bias.
  {
    SavedHead s("eagle1_safeailab");
    edit_config(s.dir, [](json& j) { j.erase("bias"); });
    EXPECT_TRUE(load_eagle_head(s.dir, target()).config().fc_bias);
  }
  // P-EAGLE: mask_hidden as [1, 1, n] in an AWS checkpoint and the mask token id precedence
  // mask_token_id > pard_token > ptd_token_id; a string id is accepted.
  {
    SavedHead s("peagle_aws");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) { tensor(t, "mask_hidden").shape = {1, 1, 144}; });
    edit_config(s.dir, [](json& j) {
      j["pard_token"] = 7;
      j["mask_token_id"] = "9";
    });
    const EagleHead h = load_eagle_head(s.dir, target());
    EXPECT_EQ(h.config().mask_token_id, 9);
    EXPECT_EQ(h.mask_hidden().size(), 144);
    edit_config(s.dir, [](json& j) { j.erase("mask_token_id"); });
    EXPECT_EQ(load_eagle_head(s.dir, target()).config().mask_token_id, 7);
  }
  // An AWS checkpoint without t2d: derived from d2t.
  {
    SavedHead s("peagle_aws");
    const EagleHead before = load_eagle_head(s.dir, target());
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) { remove_tensor(t, "t2d"); });
    const EagleHead after = load_eagle_head(s.dir, target());
    EXPECT_EQ(after.weights().t2d, before.weights().t2d);
  }
  // speculators: unordered aux ids are the same layers (the target concatenates in layer order).
  {
    SavedHead s("eagle3_speculators_qwen3");
    edit_config(s.dir, [](json& j) { j["eagle_aux_hidden_state_layer_ids"] = {3, 1}; });
    EXPECT_EQ(load_eagle_head(s.dir, target()).config().aux_layers, (std::vector<int>{1, 3}));
  }
}

TEST(EagleCheckpoint, SaveOverwritesAnExistingHead) {
  ScratchDir scratch("eagle-over");
  const fs::path dir = scratch / "head";
  save_eagle_head(dir, make_head(find_case("eagle3_safeailab")), Dtype::F32);
  testing::write_text(dir / "model.safetensors.index.json", "{}");
  const EagleHead other = make_head(find_case("peagle_aws"));
  save_eagle_head(dir, other, Dtype::F32);
  EXPECT_EQ(ScratchDir::entries_of(dir), (std::vector<std::string>{"config.json", "model.safetensors"}));
  const EagleHead loaded = load_eagle_head(dir, target());
  EXPECT_TRUE(loaded.config() == other.config());
}

// --- forward ------------------------------------------------------------------------------------

std::vector<testing::LVec> to_lvec(const Matrix& m, int cols) {
  std::vector<testing::LVec> out;
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    testing::LVec v(static_cast<std::size_t>(cols));
    for (int i = 0; i < cols; ++i) v[static_cast<std::size_t>(i)] = m(r, i);
    out.push_back(v);
  }
  return out;
}

void expect_close(const std::vector<testing::LVec>& want, const Matrix& got, double tol, const std::string& label) {
  ASSERT_EQ(static_cast<Eigen::Index>(want.size()), got.rows()) << label;
  for (Eigen::Index r = 0; r < got.rows(); ++r) {
    ASSERT_EQ(static_cast<Eigen::Index>(want[r].size()), got.cols()) << label;
    for (Eigen::Index i = 0; i < got.cols(); ++i) {
      const double w = static_cast<double>(want[r][i]);
      ASSERT_NEAR(got(r, i), w, tol * std::max(1.0, std::abs(w))) << label << " row " << r << " col " << i;
    }
  }
}

TEST(EagleForward, MatchesNaiveLongDoubleForward) {
  for (const Case& k : cases()) {
    const std::string label = k.name + " (seed " + std::to_string(k.seed) + ")";
    const EagleHead head = make_head(k);
    const EagleHeadConfig& c = head.config();
    const int T = 5;
    // EAGLE-3 / P-EAGLE: rows 2 and 4 feed a hidden state back (projected); junk past H.
    const std::vector<int> proj = c.reads_final_hidden() ? std::vector<int>{} : std::vector<int>{2, 4};
    const EagleHead::Input in = random_input(head, T, k.seed * 31, proj);
    auto cache = head.new_cache(16);
    const EagleHead::Output out = head.forward(*cache, in);
    ASSERT_EQ(out.logits.cols(), c.kind == EagleKind::eagle1 ? c.target_vocab : c.draft_vocab) << label;

    std::vector<testing::LVec> features;
    std::vector<bool> projected;
    for (int t = 0; t < T; ++t) {
      const bool p = !in.projected.empty() && in.projected[static_cast<std::size_t>(t)];
      projected.push_back(p);
      features.push_back(to_lvec(in.features.row(t), p ? c.hidden() : c.feature_width())[0]);
    }
    const testing::NaiveEagleOutput want = testing::naive_eagle_forward(
        c, head.weights(), head.embeddings(), head.output_head(), in.tokens, features, projected);
    expect_close(want.hidden, out.hidden, 1e-4, label + " hidden");
    expect_close(want.logits, out.logits, 1e-4, label + " logits");
  }
}

TEST(EagleForward, UsesTheRightEmbeddingsAndHeads) {
  // EAGLE-1 shares the target's embeddings and LM head; a head with its own uses those.
  const EagleHead e1 = make_head(find_case("eagle1_safeailab"));
  EXPECT_EQ(&e1.embeddings(), &target().weights().embed_tokens);
  EXPECT_EQ(&e1.output_head(), &target().weights().output_head());
  const EagleHead e1own = make_head(find_case("eagle1_two_layers_own_embed"));
  EXPECT_EQ(&e1own.embeddings(), &e1own.weights().embed_tokens);
  EXPECT_EQ(&e1own.output_head(), &target().weights().output_head());
  const EagleHead e3 = make_head(find_case("eagle3_safeailab"));
  EXPECT_EQ(&e3.embeddings(), &target().weights().embed_tokens);
  EXPECT_EQ(&e3.output_head(), &e3.weights().lm_head);
  const EagleHead pe = make_head(find_case("peagle_aws"));
  EXPECT_EQ(&pe.embeddings(), &pe.weights().embed_tokens);
}

TEST(EagleForward, BatchInvariantIncludingProjectedRowsAndAPrefix) {
  for (const Case& k : cases()) {
    const std::string label = k.name + " (seed " + std::to_string(k.seed) + ")";
    const EagleHead head = make_head(k);
    const bool eagle1 = head.config().reads_final_hidden();  // EAGLE-1 and MTP: no projected rows
    const EagleHead::Input prefix = random_input(head, 3, k.seed + 1);
    const EagleHead::Input in = random_input(head, 6, k.seed + 2, eagle1 ? std::vector<int>{} : std::vector<int>{1, 4, 5});
    auto batched = head.new_cache(16), single = head.new_cache(16);
    head.forward(*batched, prefix);
    for (int t = 0; t < 3; ++t) head.forward(*single, one_row(prefix, t));
    const EagleHead::Output all = head.forward(*batched, in);
    for (int t = 0; t < 6; ++t) {
      const EagleHead::Output one = head.forward(*single, one_row(in, t));
      expect_bitwise(all.logits.row(t), one.logits, label + " logits row " + std::to_string(t));
      expect_bitwise(all.hidden.row(t), one.hidden, label + " hidden row " + std::to_string(t));
    }
    EXPECT_TRUE(dynamic_cast<DenseKVCache&>(*batched).equals(dynamic_cast<DenseKVCache&>(*single))) << label;
  }
}

TEST(EagleForward, ProjectedRowsIgnoreColumnsPastHAndMatchFcOfTheFeature) {
  for (const std::string name : {"eagle3_safeailab", "peagle_aws", "eagle3_speculators_qwen3"}) {
    const EagleHead head = make_head(find_case(name));
    const EagleHeadConfig& c = head.config();
    const int H = c.hidden();
    // Row 0 goes through fc; row 1 is the same feature pre-projected (fc(x) computed outside).
    EagleHead::Input a = random_input(head, 2, 5);
    a.tokens[1] = a.tokens[0];
    a.features.row(1) = a.features.row(0);
    a.positions = {4, 4};
    a.mask = AttentionMask::causal(0, 2);
    a.mask->set(1, 0, false);  // two independent rows at the same position
    EagleHead::Input b = a;
    const Matrix fused = ops::linear(a.features.topRows(1), head.weights().fc, head.weights().fc_bias);
    b.features.row(1).setConstant(123.0f);  // junk past H must not matter
    b.features.row(1).head(H) = fused.row(0);
    b.projected = {0, 1};
    auto ca = head.new_cache(4), cb = head.new_cache(4);
    const EagleHead::Output oa = head.forward(*ca, a), ob = head.forward(*cb, b);
    expect_bitwise(oa.hidden, ob.hidden, name + " hidden");
    expect_bitwise(oa.logits, ob.logits, name + " logits");
    // Every row projected: features may be exactly H wide.
    EagleHead::Input narrow;
    narrow.tokens = {a.tokens[0]};
    narrow.features = fused;
    narrow.projected = {1};
    narrow.positions = {4};
    narrow.logit_rows = {0};
    auto cn = head.new_cache(4);
    expect_bitwise(head.forward(*cn, narrow).logits, ob.logits.row(1), name + " H-wide projected row");
  }
}

TEST(EagleForward, PEagleParallelSlotsInOneForwardEqualSlotBySlot) {
  // One forward over [real slot, K−1 mask slots] gives the same K logits as the K slots one at a
  // time, and mask slots are exactly (mask token, mask_hidden).
  const EagleHead head = make_head(find_case("peagle_aws"));
  const EagleHeadConfig& c = head.config();
  const int K = 4;
  EagleHead::Input in = random_input(head, K, 9);
  for (int t = 1; t < K; ++t) {
    in.tokens[static_cast<std::size_t>(t)] = c.mask_token_id;
    in.features.row(t) = head.mask_hidden().transpose();
  }
  auto one_shot = head.new_cache(16);
  auto stepwise = head.new_cache(16);
  head.forward(*one_shot, random_input(head, 3, 10));
  head.forward(*stepwise, random_input(head, 3, 10));
  const EagleHead::Output all = head.forward(*one_shot, in);
  ASSERT_EQ(all.logits.rows(), K);
  for (int t = 0; t < K; ++t) {
    const EagleHead::Output one = head.forward(*stepwise, one_row(in, t));
    expect_bitwise(all.logits.row(t), one.logits, "peagle slot " + std::to_string(t));
  }
  // The mask slots' KV entries roll back with truncate.
  one_shot->truncate(4);
  EXPECT_EQ(one_shot->length(), 4);
}

TEST(EagleForward, Eagle1ChainFeedsItsOwnHiddenBack) {
  // EAGLE-1 drafts autoregressively at feature level: step 2's feature is step 1's hidden.
  const EagleHead head = make_head(find_case("eagle1_safeailab"));
  EagleHead::Input step1 = random_input(head, 1, 3);
  auto cache = head.new_cache(8);
  const EagleHead::Output o1 = head.forward(*cache, step1);
  EagleHead::Input step2 = random_input(head, 1, 4);
  step2.features = o1.hidden;
  const EagleHead::Output o2 = head.forward(*cache, step2);
  // The same two rows in one call.
  EagleHead::Input both = random_input(head, 2, 3);
  both.tokens = {step1.tokens[0], step2.tokens[0]};
  both.features.row(0) = step1.features.row(0);
  both.features.row(1) = o1.hidden.row(0);
  auto cache2 = head.new_cache(8);
  const EagleHead::Output ob = head.forward(*cache2, both);
  expect_bitwise(ob.logits.row(1), o2.logits, "eagle1 chain");
}

// --- d2t ----------------------------------------------------------------------------------------

TEST(EagleVocab, D2tMapsDraftIdsIntoTheTargetVocabulary) {
  const EagleHead head = make_head(find_case("eagle3_safeailab"));
  const EagleWeights& w = head.weights();
  ASSERT_EQ(w.d2t.size(), 40u);
  int in_vocab = 0;
  int32_t previous = -1;
  for (int32_t d = 0; d < 40; ++d) {
    const int32_t t = head.to_target(d);
    EXPECT_EQ(t, d + w.d2t[static_cast<std::size_t>(d)]) << "draft id " << d;
    EXPECT_GT(t, previous) << "draft ids map to ascending target ids, draft id " << d;
    EXPECT_TRUE(head.in_draft_vocab(t)) << "draft id " << d;
    previous = t;
  }
  for (int32_t t = 0; t < 97; ++t) in_vocab += head.in_draft_vocab(t) ? 1 : 0;
  EXPECT_EQ(in_vocab, 40);
  // Without d2t the mapping is the identity and every id is in the draft vocabulary.
  const EagleHead full = make_head(find_case("peagle_speculators_bias"));
  for (int32_t d : {0, 5, 96}) EXPECT_EQ(full.to_target(d), d);
  EXPECT_TRUE(full.in_draft_vocab(50));
  // A hand-written d2t survives a round trip into the head's mapping.
  SavedHead s("eagle3_safeailab");
  edit_tensors(s.dir, [](std::vector<StoredTensor>& t) {
    StoredTensor& d2t = tensor(t, "d2t");
    StoredTensor& t2d = tensor(t, "t2d");
    std::fill(t2d.ints.begin(), t2d.ints.end(), 0);
    for (int64_t d = 0; d < 40; ++d) {
      d2t.ints[static_cast<std::size_t>(d)] = 2 * d + 1 - d;  // draft d -> target 2d + 1
      t2d.ints[static_cast<std::size_t>(2 * d + 1)] = 1;
    }
  });
  const EagleHead edited = load_eagle_head(s.dir, target());
  EXPECT_EQ(edited.to_target(0), 1);
  EXPECT_EQ(edited.to_target(39), 79);
  EXPECT_TRUE(edited.in_draft_vocab(79));
  EXPECT_FALSE(edited.in_draft_vocab(80));
  EXPECT_CONTAINS(error_of([&] { edited.to_target(40); }), "draft id 40 outside the draft vocabulary [0, 40)");
  EXPECT_CONTAINS(error_of([&] { edited.to_target(-1); }), "draft id -1");
  EXPECT_CONTAINS(error_of([&] { edited.in_draft_vocab(97); }), "token id 97 outside the vocabulary [0, 97)");
}

// --- errors: checkpoints ------------------------------------------------------------------------

TEST(EagleErrors, MismatchesWithTheTarget) {
  SavedHead s("eagle3_safeailab");
  {
    ModelConfig c = testing::tiny_llama(101);
    const Transformer other = testing::make_model(c, 2);
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, other); }),
                    "head vocab_size 97 does not match the target's vocab_size 101");
  }
  {
    ModelConfig c = testing::tiny_llama();
    c.hidden_size = 40;
    c.num_attention_heads = 5;
    c.num_key_value_heads = 1;
    const Transformer other = testing::make_model(c, 2);
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, other); }),
                    "head target_hidden_size 48 does not match the target's hidden_size 40");
  }
  {
    // A 4-layer target has no three distinct default layers {2, 2, 1}.
    ModelConfig c = testing::tiny_llama();
    c.num_hidden_layers = 4;
    const Transformer deep = testing::make_model(c, 2);
    const std::string e = error_of([&] { load_eagle_head(s.dir, deep); });
    EXPECT_CONTAINS(e, "config.json");
    EXPECT_CONTAINS(e, "too shallow");
    EXPECT_CONTAINS(e, "eagle_aux_hidden_state_layer_ids");
  }
  edit_config(s.dir, [](json& j) { j["eagle_aux_hidden_state_layer_ids"] = {0, 5}; });
  EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "aux layer 5 is outside [0, 3]");
  edit_config(s.dir, [](json& j) { j["eagle_aux_hidden_state_layer_ids"] = {0, -1}; });
  EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "expected a hidden-state index >= 0");
  edit_config(s.dir, [](json& j) { j["eagle_aux_hidden_state_layer_ids"] = {1, 1, 2}; });
  EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "must be distinct");
  // Without own embeddings the head's H must equal the target's.
  SavedHead q("eagle3_speculators_qwen3");
  edit_tensors(q.dir, [](std::vector<StoredTensor>& t) { remove_tensor(t, "embed_tokens.weight"); });
  EXPECT_CONTAINS(error_of([&] { load_eagle_head(q.dir, target()); }),
                  "has no embed_tokens.weight and its hidden_size 32 differs from the target's 48");
}

TEST(EagleErrors, MalformedOrMissingTensors) {
  {
    SavedHead s("eagle3_safeailab");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) { remove_tensor(t, "midlayer.hidden_norm.weight"); });
    const std::string e = error_of([&] { load_eagle_head(s.dir, target()); });
    EXPECT_CONTAINS(e, "missing tensor 'midlayer.hidden_norm.weight'");
    EXPECT_CONTAINS(e, "eagle3 head in the safeailab layout");
  }
  {
    SavedHead s("eagle3_safeailab");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) {
      StoredTensor& fc = tensor(t, "fc.weight");
      fc.shape = {48, 96};  // [H, 2Ht]: an EAGLE-1 shape
      fc.floats.resize(48 * 96);
    });
    const std::string e = error_of([&] { load_eagle_head(s.dir, target()); });
    EXPECT_CONTAINS(e, "model.safetensors");
    EXPECT_CONTAINS(e, "tensor 'fc.weight' has shape [48, 96], expected [48, 144]");
  }
  {
    SavedHead s("eagle3_safeailab");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) {
      StoredTensor& q = tensor(t, "midlayer.self_attn.q_proj.weight");
      q.shape = {48, 48};  // q/k/v of the fused layer must be 2H wide
      q.floats.resize(48 * 48);
    });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }),
                    "tensor 'midlayer.self_attn.q_proj.weight' has shape [48, 48], expected [48, 96]");
  }
  {
    SavedHead s("eagle3_safeailab");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) { remove_tensor(t, "d2t"); remove_tensor(t, "t2d"); });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "missing tensor 'd2t'");
  }
  {
    SavedHead s("eagle3_safeailab");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) { remove_tensor(t, "d2t"); });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "missing tensor 'd2t'");
  }
  {
    SavedHead s("eagle3_safeailab");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) {
      StoredTensor& d2t = tensor(t, "d2t");
      d2t.dtype = Dtype::F32;
      d2t.floats.assign(d2t.ints.begin(), d2t.ints.end());
      d2t.ints.clear();
    });
    const std::string e = error_of([&] { load_eagle_head(s.dir, target()); });
    EXPECT_CONTAINS(e, "tensor 'd2t' has dtype F32");
  }
  {
    SavedHead s("eagle3_safeailab");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) { tensor(t, "d2t").shape = {20, 2}; });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "tensor 'd2t' has shape [20, 2], expected [40]");
  }
  {
    SavedHead s("peagle_aws");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) {
      StoredTensor& m = tensor(t, "mask_hidden");
      m.shape = {1, 48};  // H instead of 3Ht values
      m.floats.resize(48);
    });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }),
                    "tensor 'mask_hidden' has shape [1, 48], expected [144] (optionally with leading 1-dimensions)");
  }
  {
    SavedHead s("peagle_speculators_bias");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) { remove_tensor(t, "layers.1.input_layernorm.weight"); });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }),
                    "missing tensor 'layers.1.input_layernorm.weight' (expected for a peagle head in the speculators layout)");
  }
  {
    SavedHead s("eagle1_safeailab");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) { remove_tensor(t, "fc.bias"); });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "missing tensor 'fc.bias'");
  }
}

TEST(EagleErrors, PickledWeightsAreNamedWithTheConversion) {
  // SafeAILab's EAGLE-1 heads are mostly a config.json beside a pickled pytorch_model.bin.
  for (const char* pickle : {"pytorch_model.bin", "pytorch_model.bin.index.json"}) {
    SavedHead s("eagle1_safeailab");
    fs::remove(s.dir / "model.safetensors");
    testing::write_text(s.dir / pickle, "not read");
    const std::string e = error_of([&] { load_eagle_head(s.dir, target()); });
    EXPECT_CONTAINS(e, (s.dir / pickle).string());
    EXPECT_CONTAINS(e, "PyTorch pickle");
    EXPECT_CONTAINS(e, "convert them to model.safetensors");
  }
}

TEST(EagleErrors, BadDraftVocabularyMapping) {
  SavedHead s("eagle3_safeailab");
  auto set_d2t = [&](int64_t draft_id, int64_t offset) {
    edit_tensors(s.dir, [&](std::vector<StoredTensor>& t) { tensor(t, "d2t").ints[static_cast<std::size_t>(draft_id)] = offset; });
  };
  const std::vector<StoredTensor> original = read_tensors(s.dir / "model.safetensors");
  set_d2t(39, 97 - 39);  // target id 97 = V
  EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }),
                  "tensor 'd2t' maps draft id 39 (offset 58) to target id 39 + 58, outside [0, 97)");
  write_tensors(s.dir / "model.safetensors", original);
  set_d2t(0, -1);
  EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "maps draft id 0 (offset -1)");
  write_tensors(s.dir / "model.safetensors", original);
  // Draft id 1 onto draft id 0's target.
  const int64_t t0 = tensor(const_cast<std::vector<StoredTensor>&>(original), "d2t").ints[0];
  set_d2t(1, t0 - 1);
  EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "maps two draft ids to target id " + std::to_string(t0));
  write_tensors(s.dir / "model.safetensors", original);
  // t2d that disagrees with d2t.
  edit_tensors(s.dir, [&](std::vector<StoredTensor>& t) {
    StoredTensor& t2d = tensor(t, "t2d");
    t2d.ints[static_cast<std::size_t>(t0)] = 0;
  });
  EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }),
                  "tensor 't2d' disagrees with 'd2t' at target id " + std::to_string(t0));
  write_tensors(s.dir / "model.safetensors", original);
  edit_tensors(s.dir, [&](std::vector<StoredTensor>& t) {
    StoredTensor& t2d = tensor(t, "t2d");
    t2d.dtype = Dtype::U8;
    t2d.ints[0] = 2;
  });
  EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "tensor 't2d' holds 2, expected booleans");
}

TEST(EagleErrors, BadConfigs) {
  {
    SavedHead s("peagle_aws");
    edit_config(s.dir, [](json& j) { j["ptd_token_id"] = 97; });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }),
                    "P-EAGLE mask token id 97 is outside the vocabulary [0, 97)");
    edit_config(s.dir, [](json& j) { j["ptd_token_id"] = "x1"; });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "field 'ptd_token_id' must be an integer");
  }
  {
    SavedHead s("peagle_speculators_bias");
    edit_config(s.dir, [](json& j) { j.erase("mask_token_id"); });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }),
                    "no mask token: expected 'mask_token_id', 'pard_token' or 'ptd_token_id'");
    edit_config(s.dir, [](json& j) { j["speculators_model_type"] = "medusa"; });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }),
                    "speculators_model_type 'medusa' is not supported (expected eagle3, peagle or mtp)");
    edit_config(s.dir, [](json& j) {
      j["speculators_model_type"] = "peagle";
      j["mask_token_id"] = 3;
      j["norm_before_fc"] = true;
    });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "option 'norm_before_fc' = true is not supported");
    edit_config(s.dir, [](json& j) {
      j.erase("norm_before_fc");
      j.erase("transformer_layer_config");
    });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "no 'transformer_layer_config' object");
  }
  {
    SavedHead s("eagle3_speculators_qwen3");
    edit_config(s.dir, [](json& j) { j["transformer_layer_config"]["num_key_value_heads"] = 3; });
    const std::string e = error_of([&] { load_eagle_head(s.dir, target()); });
    EXPECT_CONTAINS(e, "transformer_layer_config");
    EXPECT_CONTAINS(e, "num_attention_heads 4 is not a multiple of num_key_value_heads 3");
    edit_config(s.dir, [](json& j) {
      j["transformer_layer_config"]["num_key_value_heads"] = 1;
      j["draft_vocab_size"] = 98;
    });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "draft_vocab_size 98 must be in [1, vocab_size = 97]");
  }
  {
    // Neither a speculators config nor any tensor that tells which head this is.
    SavedHead s("eagle1_safeailab");
    edit_tensors(s.dir, [](std::vector<StoredTensor>& t) {
      std::vector<StoredTensor> keep;
      for (StoredTensor& x : t)
        if (x.name.rfind("layers.0.", 0) != 0) keep.push_back(x);
      t = keep;
    });
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "cannot tell which drafter head this is");
  }
  {
    SavedHead s("eagle1_safeailab");
    testing::write_text(s.dir / "config.json", "{\"hidden_size\": ");
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "config.json: not valid JSON");
    fs::remove(s.dir / "config.json");
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(s.dir, target()); }), "cannot open drafter head config");
  }
  {
    ScratchDir scratch("eagle-none");
    EXPECT_CONTAINS(error_of([&] { load_eagle_head(scratch / "nope", target()); }), "does not exist");
  }
}

TEST(EagleErrors, SaveRejectsBadDtypeAndMissingParentLeavingNothing) {
  const EagleHead head = make_head(find_case("eagle3_safeailab"));
  ScratchDir scratch("eagle-save");
  EXPECT_CONTAINS(error_of([&] { save_eagle_head(scratch / "head", head, Dtype::I32); }),
                  "saved as F32, F16 or BF16, not I32");
  EXPECT_TRUE(scratch.entries().empty());
  EXPECT_CONTAINS(error_of([&] { save_eagle_head(scratch / "a" / "b", head, Dtype::F32); }), "does not exist");
  EXPECT_TRUE(scratch.entries().empty());
  testing::write_text(scratch / "file", "x");
  EXPECT_CONTAINS(error_of([&] { save_eagle_head(scratch / "file", head, Dtype::F32); }), "is not a directory");
}

// --- errors: construction and forward -----------------------------------------------------------

TEST(EagleErrors, RandomHeadAndWeightChecks) {
  EagleHeadConfig c = find_case("eagle1_safeailab").config;
  EXPECT_CONTAINS(error_of([&] { random_eagle_head(c, target(), 1, -1.0f); }), "stddev must be a non-negative number");
  c.draft_vocab = 50;
  EXPECT_CONTAINS(error_of([&] { random_eagle_head(c, target(), 1, 0.1f); }),
                  "uses the target's LM head: draft_vocab_size 50 must equal vocab_size 97");
  c = find_case("eagle1_safeailab").config;
  c.layout = "speculators";
  EXPECT_CONTAINS(error_of([&] { random_eagle_head(c, target(), 1, 0.1f); }),
                  "layout 'speculators' is not available for a eagle1 head");
  c = find_case("peagle_aws").config;
  c.mask_token_id = -1;
  EXPECT_CONTAINS(error_of([&] { random_eagle_head(c, target(), 1, 0.1f); }), "mask token id -1 is outside the vocabulary");
  c = find_case("eagle3_safeailab").config;
  c.num_layers = 2;
  EXPECT_CONTAINS(error_of([&] { random_eagle_head(c, target(), 1, 0.1f); }),
                  "num_hidden_layers 1 differs from num_layers 2");

  // Weights that do not fit the config.
  const EagleHead good = make_head(find_case("eagle3_safeailab"));
  EagleWeights w = good.weights();
  w.fc_bias = Vector::Zero(48);
  EXPECT_CONTAINS(error_of([&] { EagleHead(good.config(), w, target()); }),
                  "weights carry 'fc.bias' but the eagle3 config has no place for it");
  w = good.weights();
  w.layers[0].input_layernorm.resize(0);
  EXPECT_CONTAINS(error_of([&] { EagleHead(good.config(), w, target()); }),
                  "tensor 'midlayer.input_layernorm.weight' has shape [0], the eagle3 config calls for [48]");
  w = good.weights();
  w.t2d.clear();  // derived from d2t
  EXPECT_EQ(EagleHead(good.config(), w, target()).weights().t2d, good.weights().t2d);
  w.d2t.clear();
  EXPECT_CONTAINS(error_of([&] { EagleHead(good.config(), w, target()); }), "tensor 'd2t' is missing");
}

TEST(EagleErrors, ForwardRejectsBadInputsWithoutTouchingTheCache) {
  const EagleHead head = make_head(find_case("eagle3_safeailab"));
  auto cache = head.new_cache(8);
  head.forward(*cache, random_input(head, 2, 1));
  const DenseKVCache before = dynamic_cast<DenseKVCache&>(*cache);
  auto expect_error = [&](const EagleHead& h, KVCache& c, const EagleHead::Input& in, const std::string& needle) {
    const std::string e = error_of([&] { h.forward(c, in); });
    EXPECT_CONTAINS(e, "eagle head forward");
    EXPECT_CONTAINS(e, needle);
  };
  EagleHead::Input in = random_input(head, 3, 2);
  EagleHead::Input bad = in;
  bad.features.resize(3, 48);
  expect_error(head, *cache, bad, "features are 48 wide, expected 144 (n_aux x target hidden size)");
  bad = in;
  bad.features.conservativeResize(2, Eigen::NoChange);
  expect_error(head, *cache, bad, "features have 2 rows for 3 tokens");
  bad = in;
  bad.tokens[1] = 97;
  expect_error(head, *cache, bad, "token id 97 outside the vocabulary [0, 97)");
  bad = in;
  bad.logit_rows = {3};
  expect_error(head, *cache, bad, "logit row 3 outside [0, 3)");
  bad = in;
  bad.projected = {1};
  expect_error(head, *cache, bad, "1 projected flags given for 3 tokens");
  bad = in;
  bad.tokens.clear();
  expect_error(head, *cache, bad, "no tokens given");
  bad = in;
  bad.mask = AttentionMask::causal(0, 3);
  EXPECT_CONTAINS(error_of([&] { head.forward(*cache, bad); }), "attention mask is 3x3, expected 3x5");
  bad = in;
  bad.positions = {1, -2, 3};
  EXPECT_CONTAINS(error_of([&] { head.forward(*cache, bad); }), "negative position -2");
  EXPECT_TRUE(dynamic_cast<DenseKVCache&>(*cache).equals(before));

  // A cache of another model.
  auto target_cache = target().new_cache(8);
  expect_error(head, *target_cache, in, "the KV cache has 3 layers of width 16, the head needs 1 of width 24");
  // An overflowing cache.
  auto small = head.new_cache(2);
  EXPECT_CONTAINS(error_of([&] { head.forward(*small, in); }), "KV cache: 3 new tokens do not fit");
  EXPECT_EQ(small->length(), 0);

  const EagleHead e1 = make_head(find_case("eagle1_safeailab"));
  auto c1 = e1.new_cache(8);
  EagleHead::Input p = random_input(e1, 2, 3, {1});
  expect_error(e1, *c1, p, "an EAGLE-1 head has no projected rows");
  EXPECT_EQ(c1->length(), 0);
}

}  // namespace
}  // namespace specdec
