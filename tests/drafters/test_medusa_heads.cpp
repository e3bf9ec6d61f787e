// Medusa heads: the forward against a naive double-precision loop, batch invariance, save/load
// round trips in the FasterDecoding and vLLM layouts, every refusal a user's checkpoint can cause,
// the cpu engine bitwise against the reference, the proposer's chain and tree against the heads'
// own choices, and greedy / coupled Medusa decoding equal to sequential decoding token for token
// on the reference and cpu backends.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "optimized/cpu/cpu_medusa_heads.hpp"
#include "optimized/cpu/cpu_transformer.hpp"
#include "optimized/cpu/dot_kernels.hpp"
#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/core/normal_source.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafters/medusa_checkpoint.hpp"
#include "reference/drafters/medusa_heads.hpp"
#include "reference/drafting/head_candidates.hpp"
#include "reference/drafting/medusa_proposer.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/methods/registry.hpp"
#include "reference/model/ops.hpp"
#include "reference/model/precision.hpp"
#include "tests/optimized/cpu_fixtures.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/model_fixtures.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::error_of;
using testing::ScratchDir;

const ModelConfig& target_config() {
  static const ModelConfig c = testing::tiny_llama();  // H 48, V 97, untied
  return c;
}

// --- heads --------------------------------------------------------------------------------------

struct HeadsCase {
  std::string name;
  MedusaConfig config;
  uint64_t seed = 0;
};

// One of each feature: FasterDecoding with 0, 1 and 3 blocks; vLLM without and with biases, with a
// shared projection and a logit scale.
std::vector<HeadsCase> heads_cases() {
  const ModelConfig& t = target_config();
  std::vector<HeadsCase> out;
  out.push_back({"medusa_k4_l1", medusa_config_for(t, 4, 1), 101});
  out.push_back({"medusa_k3_l0", medusa_config_for(t, 3, 0), 102});
  out.push_back({"medusa_k2_l3", medusa_config_for(t, 2, 3), 103});
  out.push_back({"vllm_k5_nobias", medusa_config_for(t, 5, 1, MedusaLayout::vllm), 104});
  MedusaConfig bias = medusa_config_for(t, 3, 2, MedusaLayout::vllm);
  bias.fc_bias = true;
  out.push_back({"vllm_k3_bias_l2", bias, 105});
  MedusaConfig shared = medusa_config_for(t, 4, 1, MedusaLayout::vllm);
  shared.shared_lm_head = true;
  shared.logit_scale = 0.75f;
  out.push_back({"vllm_shared_scaled", shared, 106});
  return out;
}

MedusaHeads make_heads(const HeadsCase& c) { return random_medusa_heads(c.config, target_config(), c.seed, 0.08f); }

Matrix random_hidden(int rows, int H, uint64_t seed) {
  NormalSource normal(seed);
  Matrix m(rows, H);  // (rows, H)
  for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<float>(normal.next());
  return m;
}

// The math of medusa_heads.hpp as plain loops in double: logits[k][r·V + v].
std::vector<std::vector<double>> naive_forward(const MedusaHeads& heads, const Matrix& hidden) {
  const MedusaConfig& c = heads.config();
  const int R = static_cast<int>(hidden.rows()), H = c.hidden, V = c.vocab;
  std::vector<std::vector<double>> out;
  for (int k = 0; k < c.num_heads; ++k) {
    std::vector<double> logits(static_cast<std::size_t>(R) * V);
    for (int r = 0; r < R; ++r) {
      std::vector<double> x(static_cast<std::size_t>(H));
      for (int i = 0; i < H; ++i) x[i] = hidden(r, i);
      for (const MedusaBlock& b : heads.weights().blocks[static_cast<std::size_t>(k)]) {
        std::vector<double> next = x;
        for (int o = 0; o < H; ++o) {
          double z = b.bias.size() ? b.bias[o] : 0.0;
          for (int i = 0; i < H; ++i) z += static_cast<double>(b.weight(o, i)) * x[i];
          next[o] += z / (1.0 + std::exp(-z));
        }
        x = next;
      }
      for (int v = 0; v < V; ++v) {
        double s = 0.0;
        for (int i = 0; i < H; ++i) s += static_cast<double>(heads.lm_head(k)(v, i)) * x[i];
        logits[static_cast<std::size_t>(r) * V + v] = s * c.logit_scale;
      }
    }
    out.push_back(std::move(logits));
  }
  return out;
}

void expect_bitwise(const Matrix& want, const Matrix& got, const std::string& where) {
  EXPECT_TRUE(testing::bitwise_equal(want, got)) << where;
}

void expect_same_weights(const MedusaHeads& a, const MedusaHeads& b, const std::string& where) {
  ASSERT_EQ(a.weights().blocks.size(), b.weights().blocks.size()) << where;
  for (std::size_t k = 0; k < a.weights().blocks.size(); ++k) {
    ASSERT_EQ(a.weights().blocks[k].size(), b.weights().blocks[k].size()) << where;
    for (std::size_t l = 0; l < a.weights().blocks[k].size(); ++l) {
      expect_bitwise(a.weights().blocks[k][l].weight, b.weights().blocks[k][l].weight, where + ": block weight");
      const Vector& x = a.weights().blocks[k][l].bias;
      const Vector& y = b.weights().blocks[k][l].bias;
      EXPECT_TRUE(x.size() == y.size() && (x.size() == 0 || std::memcmp(x.data(), y.data(), sizeof(float) * x.size()) == 0))
          << where << ": block bias " << k << "." << l;
    }
  }
  ASSERT_EQ(a.weights().lm_heads.size(), b.weights().lm_heads.size()) << where;
  for (std::size_t k = 0; k < a.weights().lm_heads.size(); ++k) expect_bitwise(a.weights().lm_heads[k], b.weights().lm_heads[k], where + ": projection");
}

// `heads` with every weight rounded to `precision`, as a checkpoint stored there holds them.
MedusaHeads rounded(const MedusaHeads& heads, Dtype precision) {
  MedusaWeights w = heads.weights();
  for (MedusaTensor& t : medusa_tensors(heads.config(), w)) {
    if (t.m) *t.m = round_to_precision(*t.m, precision);
    else round_to_precision(t.v->data(), static_cast<std::size_t>(t.v->size()), precision);
  }
  return MedusaHeads(heads.config(), std::move(w), target_config());
}

TEST(MedusaHeads, ForwardMatchesANaiveLoop) {
  for (const HeadsCase& c : heads_cases()) {
    const MedusaHeads heads = make_heads(c);
    const Matrix hidden = random_hidden(3, c.config.hidden, c.seed + 1);
    const std::vector<Matrix> got = heads.forward(hidden);
    const std::vector<std::vector<double>> want = naive_forward(heads, hidden);
    ASSERT_EQ(got.size(), static_cast<std::size_t>(c.config.num_heads)) << c.name;
    for (std::size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].rows(), 3);
      ASSERT_EQ(got[k].cols(), c.config.vocab);
      for (Eigen::Index i = 0; i < got[k].size(); ++i) {
        const double w = want[k][static_cast<std::size_t>(i)];
        ASSERT_NEAR(got[k].data()[i], w, 1e-4 * (1.0 + std::abs(w))) << c.name << ", seed " << c.seed << ", head " << k << ", element " << i;
      }
    }
  }
}

TEST(MedusaHeads, RowsAreBatchInvariantAndFewerHeadsArePrefixes) {
  for (const HeadsCase& c : heads_cases()) {
    const MedusaHeads heads = make_heads(c);
    const Matrix hidden = random_hidden(5, c.config.hidden, c.seed + 2);
    const std::vector<Matrix> all = heads.forward(hidden);
    for (int r = 0; r < 5; ++r) {
      const std::vector<Matrix> one = heads.forward(hidden.row(r));
      for (std::size_t k = 0; k < all.size(); ++k) {
        expect_bitwise(all[k].row(r), one[k], c.name + ", seed " + std::to_string(c.seed) + ": row " + std::to_string(r) + ", head " + std::to_string(k));
      }
    }
    const std::vector<Matrix> first = heads.forward(hidden, 1);
    ASSERT_EQ(first.size(), 1u);
    expect_bitwise(all[0], first[0], c.name + ": head 0 alone");
  }
}

TEST(MedusaHeads, RandomHeadsDependOnTheSeedAlone) {
  const HeadsCase c = heads_cases()[0];
  EXPECT_EQ(medusa_heads_fingerprint(make_heads(c)), medusa_heads_fingerprint(make_heads(c)));
  EXPECT_NE(medusa_heads_fingerprint(make_heads(c)),
            medusa_heads_fingerprint(random_medusa_heads(c.config, target_config(), c.seed + 1, 0.08f)));
  // The layout is storage: the same heads in either layout have one fingerprint.
  MedusaConfig v = c.config;
  v.layout = MedusaLayout::vllm;
  EXPECT_EQ(medusa_heads_fingerprint(make_heads(c)),
            medusa_heads_fingerprint(random_medusa_heads(v, target_config(), c.seed, 0.08f)));
}

TEST(MedusaHeadsErrors, ForwardInputsAndWeightsAreChecked) {
  const MedusaHeads heads = make_heads(heads_cases()[0]);
  EXPECT_CONTAINS(error_of([&] { heads.forward(Matrix(2, 47)); }), "hidden rows are 47 wide, expected the target's hidden size 48");
  EXPECT_CONTAINS(error_of([&] { heads.forward(Matrix(0, 48)); }), "no hidden rows given");
  EXPECT_CONTAINS(error_of([&] { heads.forward(Matrix::Zero(1, 48), 5); }), "5 heads asked for, the checkpoint has 4");

  MedusaWeights w = heads.weights();
  w.blocks[1][0].weight.resize(48, 47);
  EXPECT_CONTAINS(error_of([&] { MedusaHeads(heads.config(), w, target_config(), "case"); }),
                  "case: tensor '1.0.linear.weight' has shape [48, 47], expected [48, 48]");
  w = heads.weights();
  w.lm_heads.pop_back();
  EXPECT_CONTAINS(error_of([&] { MedusaHeads(heads.config(), w, target_config(), "case"); }),
                  "weights hold 4 heads and 3 projections, the config calls for 4 and 4");
  ModelConfig other = target_config();
  other.vocab_size = 96;
  EXPECT_CONTAINS(error_of([&] { MedusaHeads(heads.config(), heads.weights(), other, "case"); }),
                  "case: vocab_size 97 differs from the target's 96");
  MedusaConfig no_bias = medusa_config_for(target_config(), 2, 1, MedusaLayout::vllm);
  MedusaWeights with_bias = random_medusa_heads(medusa_config_for(target_config(), 2, 1), target_config(), 1, 0.1f).weights();
  EXPECT_CONTAINS(error_of([&] { MedusaHeads(no_bias, with_bias, target_config(), "case"); }),
                  "weights carry 'blocks.0.layers.0.bias' but the config has no block biases (medusa_fc_bias)");
}

// --- checkpoints ----------------------------------------------------------------------------------

// Every tensor of a safetensors file as floats, in file order.
struct Stored {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};
std::vector<Stored> read_all(const fs::path& file) {
  const SafetensorsFile f(file);
  std::vector<Stored> out;
  for (const TensorInfo& t : f.tensors()) out.push_back({t.name, t.shape, f.floats(t.name)});
  return out;
}
void write_all(const fs::path& file, const std::vector<Stored>& tensors) {
  SafetensorsWriter w;
  for (const Stored& t : tensors) w.add_floats(t.name, Dtype::F32, t.shape, std::span<const float>(t.values));
  w.write(file);
}
json read_json(const fs::path& file) { return json::parse(testing::read_text(file)); }
void write_json(const fs::path& file, const json& j) { testing::write_text(file, j.dump(2)); }

bool layout_holds(const MedusaConfig& c, MedusaLayout layout) {
  return layout == MedusaLayout::vllm || (c.fc_bias && !c.shared_lm_head && c.logit_scale == 1.0f);
}

TEST(MedusaCheckpoint, RoundTripsBitwiseInBothLayouts) {
  for (const HeadsCase& c : heads_cases()) {
    for (MedusaLayout layout : {MedusaLayout::medusa, MedusaLayout::vllm}) {
      if (!layout_holds(c.config, layout)) continue;
      const std::string where = c.name + " saved in the " + medusa_layout_name(layout) + " layout, seed " + std::to_string(c.seed);
      ScratchDir dir("medusa-roundtrip");
      const MedusaHeads heads = make_heads(c);
      save_medusa_heads(heads, dir / "heads", layout);
      const bool vllm = layout == MedusaLayout::vllm;
      EXPECT_TRUE(fs::exists(dir / "heads" / (vllm ? "model.safetensors" : "medusa_lm_head.safetensors"))) << where;
      const json j = read_json(dir / "heads" / "config.json");
      EXPECT_EQ(j.contains("model_type"), vllm) << where;
      EXPECT_EQ(j.contains(vllm ? "num_heads" : "medusa_num_heads"), true) << where;
      EXPECT_TRUE(is_medusa_checkpoint(dir / "heads")) << where;

      const MedusaHeads loaded = load_medusa_heads(dir / "heads", target_config());
      EXPECT_EQ(loaded.config().layout, layout) << where;
      EXPECT_EQ(loaded.config().num_heads, c.config.num_heads) << where;
      EXPECT_EQ(loaded.config().num_layers, c.config.num_layers) << where;
      EXPECT_EQ(loaded.config().fc_bias, c.config.fc_bias) << where;
      EXPECT_EQ(loaded.config().shared_lm_head, c.config.shared_lm_head) << where;
      EXPECT_EQ(loaded.config().logit_scale, c.config.logit_scale) << where;
      expect_same_weights(heads, loaded, where);
      EXPECT_EQ(medusa_heads_fingerprint(heads), medusa_heads_fingerprint(loaded)) << where;
      const Matrix hidden = random_hidden(2, 48, c.seed + 3);
      const std::vector<Matrix> a = heads.forward(hidden), b = loaded.forward(hidden);
      for (std::size_t k = 0; k < a.size(); ++k) expect_bitwise(a[k], b[k], where + ": head " + std::to_string(k));

      const MedusaCheckpointInfo info = read_medusa_checkpoint(dir / "heads");
      EXPECT_EQ(info.config.hidden, 48) << where;
      EXPECT_EQ(info.config.vocab, 97) << where;
      EXPECT_EQ(info.tensors.size(), medusa_tensors(heads.config(), const_cast<MedusaWeights&>(heads.weights())).size()) << where;
    }
  }
}

TEST(MedusaCheckpoint, NarrowDtypesLoadAsTheRoundedHeads) {
  const HeadsCase c = heads_cases()[0];
  const MedusaHeads heads = make_heads(c);
  for (Dtype d : {Dtype::BF16, Dtype::F16}) {
    ScratchDir dir("medusa-dtype");
    save_medusa_heads(heads, dir.path(), MedusaLayout::medusa, d);
    expect_same_weights(rounded(heads, d), load_medusa_heads(dir.path(), target_config()), dtype_name(d));
  }
  ScratchDir dir("medusa-dtype");
  EXPECT_CONTAINS(error_of([&] { save_medusa_heads(heads, dir.path(), MedusaLayout::medusa, Dtype::I32); }),
                  "Medusa heads are saved as F32, F16 or BF16, not I32");
}

// What the engines' own files carry beyond what specdec writes: module prefixes, vLLM's shared head
// under lm_head.weight, count names vLLM renames, FasterDecoding configs without sizes.
TEST(MedusaCheckpoint, ReadsTheNamesTheEnginesWrite) {
  const HeadsCase m = heads_cases()[0];
  const MedusaHeads heads = make_heads(m);
  {  // FasterDecoding: the whole MedusaModel's medusa_head.* names, in model.safetensors, no sizes.
    ScratchDir dir("medusa-prefix");
    save_medusa_heads(heads, dir.path(), MedusaLayout::medusa);
    std::vector<Stored> t = read_all(dir / "medusa_lm_head.safetensors");
    for (Stored& s : t) s.name = "medusa_head." + s.name;
    fs::remove(dir / "medusa_lm_head.safetensors");
    write_all(dir / "model.safetensors", t);
    write_json(dir / "config.json", {{"medusa_num_heads", 4}, {"medusa_num_layers", 1}, {"base_model_name_or_path", "lmsys/vicuna-7b-v1.3"}});
    const MedusaHeads loaded = load_medusa_heads(dir.path(), target_config());
    expect_same_weights(heads, loaded, "medusa_head. prefix");
    EXPECT_EQ(loaded.config().base_model, "lmsys/vicuna-7b-v1.3");
    const MedusaCheckpointInfo info = read_medusa_checkpoint(dir.path());
    EXPECT_EQ(info.config.hidden, 48);  // from the projection's shape
    EXPECT_EQ(info.config.vocab, 97);
  }
  const HeadsCase s = heads_cases()[5];  // vLLM, shared projection
  const MedusaHeads shared = make_heads(s);
  {
    ScratchDir dir("medusa-vllm-names");
    save_medusa_heads(shared, dir.path(), MedusaLayout::vllm);
    std::vector<Stored> t = read_all(dir / "model.safetensors");
    for (Stored& x : t) x.name = x.name == "lm_heads.0.weight" ? "lm_head.weight" : "medusa_heads." + x.name;
    write_all(dir / "model.safetensors", t);
    json j = read_json(dir / "config.json");
    j["medusa_num_heads"] = j["num_heads"];  // vLLM renames it; both may be given when they agree
    write_json(dir / "config.json", j);
    expect_same_weights(shared, load_medusa_heads(dir.path(), target_config()), "medusa_heads. prefix, lm_head.weight");
  }
}

TEST(MedusaCheckpoint, SavingInTheOtherLayoutReplacesTheWeightFile) {
  const MedusaHeads heads = make_heads(heads_cases()[0]);
  ScratchDir dir("medusa-resave");
  save_medusa_heads(heads, dir.path(), MedusaLayout::medusa);
  save_medusa_heads(heads, dir.path(), MedusaLayout::vllm);
  EXPECT_FALSE(fs::exists(dir / "medusa_lm_head.safetensors"));
  EXPECT_EQ(load_medusa_heads(dir.path(), target_config()).config().layout, MedusaLayout::vllm);
  save_medusa_heads(heads, dir.path(), MedusaLayout::medusa);
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));
  EXPECT_EQ(load_medusa_heads(dir.path(), target_config()).config().layout, MedusaLayout::medusa);
  // FasterDecoding's layout cannot hold vLLM-only features.
  const MedusaHeads no_bias = make_heads(heads_cases()[3]);
  EXPECT_CONTAINS(error_of([&] { save_medusa_heads(no_bias, dir / "x", MedusaLayout::medusa); }),
                  "the FasterDecoding/Medusa layout always has block biases");
  EXPECT_FALSE(fs::exists(dir / "x"));
}

// A saved checkpoint, edited by `edit`, then loaded: the error message ("" when it loads).
std::string load_error(MedusaLayout layout, const std::function<void(const fs::path& dir)>& edit, int heads_case = 0) {
  ScratchDir dir("medusa-errors");
  save_medusa_heads(make_heads(heads_cases()[static_cast<std::size_t>(heads_case)]), dir.path(), layout);
  edit(dir.path());
  return error_of([&] { load_medusa_heads(dir.path(), target_config()); });
}

void edit_tensors(const fs::path& file, const std::function<void(std::vector<Stored>&)>& f) {
  std::vector<Stored> t = read_all(file);
  f(t);
  write_all(file, t);
}

void edit_config(const fs::path& dir, const std::function<void(json&)>& f) {
  json j = read_json(dir / "config.json");
  f(j);
  write_json(dir / "config.json", j);
}

TEST(MedusaCheckpointErrors, TensorsMissingMisshapenOrUnexpectedAreNamed) {
  const auto M = MedusaLayout::medusa, V = MedusaLayout::vllm;
  auto drop = [](const std::string& name) {
    return [name](std::vector<Stored>& t) { std::erase_if(t, [&](const Stored& s) { return s.name == name; }); };
  };
  std::string e = load_error(M, [&](const fs::path& d) { edit_tensors(d / "medusa_lm_head.safetensors", drop("2.0.linear.bias")); });
  EXPECT_CONTAINS(e, "medusa_lm_head.safetensors': missing tensor '2.0.linear.bias' (expected for 4 heads of 1 block in the medusa layout, with block biases)");
  e = load_error(M, [&](const fs::path& d) { edit_tensors(d / "medusa_lm_head.safetensors", drop("3.1.weight")); });
  EXPECT_CONTAINS(e, "missing tensor '3.1.weight'");
  e = load_error(V, [&](const fs::path& d) { edit_tensors(d / "model.safetensors", drop("lm_heads.4.weight")); }, 3);
  EXPECT_CONTAINS(e, "missing tensor 'lm_heads.4.weight' (expected for 5 heads of 1 block in the vllm layout, without block biases)");

  e = load_error(M, [&](const fs::path& d) {
    edit_tensors(d / "medusa_lm_head.safetensors", [](std::vector<Stored>& t) {
      for (Stored& s : t)
        if (s.name == "1.0.linear.weight") s.shape = {24, 96}, s.values.resize(24 * 96);
    });
  });
  EXPECT_CONTAINS(e, "1.0.linear.weight");
  EXPECT_CONTAINS(e, "[24, 96]");
  EXPECT_CONTAINS(e, "[48, 48]");

  e = load_error(M, [&](const fs::path& d) {
    edit_tensors(d / "medusa_lm_head.safetensors", [](std::vector<Stored>& t) { t.push_back({"4.0.linear.weight", {48, 48}, std::vector<float>(48 * 48)}); });
  });
  EXPECT_CONTAINS(e, "medusa_lm_head.safetensors: unexpected tensor '4.0.linear.weight': the config (4 heads of 1 block in the medusa layout, with block biases) has no place for it");
  e = load_error(V, [&](const fs::path& d) {
    edit_tensors(d / "model.safetensors", [](std::vector<Stored>& t) { t.push_back({"token_map", {97}, std::vector<float>(97)}); });
  }, 3);
  EXPECT_CONTAINS(e, "unexpected tensor 'token_map'");
  EXPECT_CONTAINS(e, "truncated_vocab_size is not below vocab_size");
  e = load_error(V, [&](const fs::path& d) {
    edit_tensors(d / "model.safetensors", [](std::vector<Stored>& t) { t.push_back({"blocks.0.layers.0.bias", {48}, std::vector<float>(48)}); });
  }, 3);
  EXPECT_CONTAINS(e, "unexpected tensor 'blocks.0.layers.0.bias'");
  EXPECT_CONTAINS(e, "medusa_fc_bias is false");
  e = load_error(M, [&](const fs::path& d) {
    edit_tensors(d / "medusa_lm_head.safetensors", [](std::vector<Stored>& t) { t.push_back({"model.norm.weight", {48}, std::vector<float>(48)}); });
  });
  EXPECT_CONTAINS(e, "unexpected tensor 'model.norm.weight'");
  EXPECT_CONTAINS(e, "keep only the medusa_head.* tensors");
  e = load_error(M, [&](const fs::path& d) {
    edit_tensors(d / "medusa_lm_head.safetensors", [](std::vector<Stored>& t) { t.push_back({"medusa_head.0.0.linear.weight", {48, 48}, std::vector<float>(48 * 48)}); });
  });
  EXPECT_CONTAINS(e, "tensors '0.0.linear.weight' and 'medusa_head.0.0.linear.weight' both hold '0.0.linear.weight'");
  // vLLM names under a FasterDecoding config.
  e = load_error(V, [&](const fs::path& d) {
    edit_config(d, [](json& j) { j = {{"medusa_num_heads", 5}, {"medusa_num_layers", 1}}; });
  }, 3);
  EXPECT_CONTAINS(e, "missing tensor '0.0.linear.weight'");
  EXPECT_CONTAINS(e, "the file's names are vLLM's");
}

TEST(MedusaCheckpointErrors, ConfigFieldsAndTargetMismatchesAreNamed) {
  const auto M = MedusaLayout::medusa, V = MedusaLayout::vllm;
  auto set = [](const std::string& key, const json& value) {
    return [=](const fs::path& d) { edit_config(d, [&](json& j) { j[key] = value; }); };
  };
  EXPECT_CONTAINS(load_error(M, set("hidden_size", 32)), "config.json: hidden_size 32 differs from the target's 48 (Medusa heads read the target's last hidden state)");
  EXPECT_CONTAINS(load_error(V, [](const fs::path& d) { edit_config(d, [](json& j) { j["vocab_size"] = j["truncated_vocab_size"] = 98; }); }, 3),
                  "config.json: vocab_size 98 differs from the target's 97");
  EXPECT_CONTAINS(load_error(M, set("medusa_num_heads", 0)), "config.json: medusa_num_heads is 0, expected 1 to 64");
  EXPECT_CONTAINS(load_error(M, set("medusa_num_heads", 65)), "medusa_num_heads is 65, expected 1 to 64");
  EXPECT_CONTAINS(load_error(M, set("medusa_num_layers", -1)), "medusa_num_layers is -1, expected 0 to 64");
  EXPECT_CONTAINS(load_error(M, set("medusa_num_heads", "4")), "medusa_num_heads must be an integer");
  EXPECT_CONTAINS(load_error(M, set("medusa_num_heads", 4294967300LL)), "medusa_num_heads must fit in 32 bits");
  EXPECT_CONTAINS(load_error(V, set("num_heads", 2.5), 3), "num_heads must be an integer, got 2.5");
  EXPECT_CONTAINS(load_error(V, set("medusa_num_heads", 4), 3), "num_heads (5) and medusa_num_heads (4) disagree");
  EXPECT_CONTAINS(load_error(V, set("truncated_vocab_size", 64), 3),
                  "truncated_vocab_size 64 is below vocab_size 97: heads over a truncated vocabulary (vLLM's token_map) are not implemented");
  EXPECT_CONTAINS(load_error(V, set("truncated_vocab_size", 98), 3), "truncated_vocab_size 98 exceeds vocab_size 97");
  EXPECT_CONTAINS(load_error(V, set("logit_scale", 0), 3), "logit_scale must be a finite number > 0, got 0");
  EXPECT_CONTAINS(load_error(V, set("logit_scale", "2"), 3), "logit_scale must be a number, got \"2\"");
  EXPECT_CONTAINS(load_error(V, set("logit_scale", 1e300), 3), "logit_scale must be a finite number > 0");
  EXPECT_CONTAINS(load_error(V, set("medusa_fc_bias", "yes"), 3), "medusa_fc_bias must be true or false, got \"yes\"");
  EXPECT_CONTAINS(load_error(V, set("original_lm_head", 1), 3), "original_lm_head must be true or false, got 1");
  EXPECT_CONTAINS(load_error(M, set("base_model_name_or_path", 7)), "base_model_name_or_path must be a string, got 7");
  // vLLM's defaults stand in for absent sizes, and are named when they do not fit.
  EXPECT_CONTAINS(load_error(V, [](const fs::path& d) { edit_config(d, [](json& j) { j.erase("hidden_size"); }); }, 3),
                  "hidden_size is absent, so vLLM takes its default 4096, which differs from the target's 48");
  // The layout follows config.json: a vLLM file without model_type is read as FasterDecoding's.
  EXPECT_CONTAINS(load_error(V, [](const fs::path& d) { edit_config(d, [](json& j) { j.erase("model_type"); }); }, 3),
                  "the file's names are vLLM's (e.g. 'blocks.0.layers.0.weight'), but config.json has no model_type \"medusa\"");
}

TEST(MedusaCheckpointErrors, PickleOnlyAndMissingFilesAreRefused) {
  ScratchDir dir("medusa-pickle");
  write_json(dir / "config.json", {{"medusa_num_heads", 4}, {"medusa_num_layers", 1}});
  testing::write_text(dir / "medusa_lm_head.pt", "PK not really a pickle");
  EXPECT_TRUE(is_medusa_checkpoint(dir.path()));
  std::string e = error_of([&] { load_medusa_heads(dir.path(), target_config()); });
  EXPECT_CONTAINS(e, "medusa_lm_head.pt' (a PyTorch pickle), which specdec does not read; convert them to safetensors first");
  EXPECT_CONTAINS(e, "safetensors.torch.save_file(");
  EXPECT_CONTAINS(e, "\"medusa_lm_head.safetensors\")");
  EXPECT_EQ(error_of([&] { read_medusa_checkpoint(dir.path()); }), e);
  EXPECT_CONTAINS(error_of([&] { load_medusa_heads(dir / "medusa_lm_head.pt", target_config()); }), "(a PyTorch pickle)");

  fs::remove(dir / "medusa_lm_head.pt");
  EXPECT_CONTAINS(error_of([&] { load_medusa_heads(dir.path(), target_config()); }),
                  "has no weights: expected medusa_lm_head.safetensors or model.safetensors");
  EXPECT_CONTAINS(error_of([&] { load_medusa_heads(dir / "nope", target_config()); }), "nope' does not exist");
  save_medusa_heads(make_heads(heads_cases()[0]), dir / "heads", MedusaLayout::medusa);
  fs::remove(dir / "heads" / "config.json");
  EXPECT_CONTAINS(error_of([&] { load_medusa_heads(dir / "heads", target_config()); }), "cannot read its config.json");
  testing::write_text(dir / "heads" / "config.json", "{not json");
  EXPECT_CONTAINS(error_of([&] { load_medusa_heads(dir / "heads", target_config()); }), "config.json: not valid JSON");
  testing::write_text(dir / "heads" / "config.json", "[1, 2]");
  EXPECT_CONTAINS(error_of([&] { load_medusa_heads(dir / "heads", target_config()); }), "config.json: expected a JSON object, got array");
  // Not a Medusa checkpoint at all: an ordinary model directory.
  ScratchDir plain("medusa-plain");
  write_json(plain / "config.json", {{"model_type", "llama"}, {"hidden_size", 48}});
  EXPECT_FALSE(is_medusa_checkpoint(plain.path()));
}

// --- the cpu engine -------------------------------------------------------------------------------

// On each kernel path (each instance skipped where this CPU cannot run it).
class CpuMedusaHeadsPaths : public testing::KernelPathTest {};
SPECDEC_INSTANTIATE_KERNEL_PATHS(CpuMedusaHeadsPaths);

TEST_P(CpuMedusaHeadsPaths, EqualsTheReferenceBitwiseForEveryRowCountPrecisionAndThreadCount) {
  ops::set_parallel_work_threshold(0);  // thread every loop, however small
  for (const HeadsCase& c : heads_cases()) {
    for (Dtype p : testing::cpu_precisions()) {
      const MedusaHeads reference = rounded(make_heads(c), p);
      const MedusaHeads cpu_heads = cpu::cpu_medusa_heads(reference);
      ASSERT_NE(cpu_heads.engine(), nullptr);
      EXPECT_EQ(cpu_heads.engine()->name(), "cpu");
      EXPECT_EQ(&cpu_heads.weights(), &reference.weights()) << "the weights are shared, not copied";
      for (int rows = 1; rows <= 5; ++rows) {
        Matrix hidden = random_hidden(rows, c.config.hidden, c.seed + 100 + rows);
        hidden(0, 0) = 40.0f, hidden(rows - 1, 1) = -40.0f;  // large pre-activations: SiLU's tails
        const std::vector<Matrix> want = reference.forward(hidden);
        for (int threads : {1, 3}) {
          ops::set_num_threads(threads);
          const std::string where = c.name + " / " + dtype_name(p) + ", rows " + std::to_string(rows) + ", threads " +
                                    std::to_string(threads) + ", " + path() + ", seed " + std::to_string(c.seed);
          const std::vector<Matrix> got = cpu_heads.forward(hidden);
          ASSERT_EQ(got.size(), want.size()) << where;
          for (std::size_t k = 0; k < got.size(); ++k) expect_bitwise(want[k], got[k], where + ", head " + std::to_string(k));
          const std::vector<Matrix> two = cpu_heads.forward(hidden, std::min(2, c.config.num_heads));
          expect_bitwise(want[0], two[0], where + ", fewer heads");
        }
      }
    }
  }
}

// Heads moved onto the cpu backend (the runtime's binding) hold one copy of their weights, compute
// bitwise what the reference does, and refuse what needs the fp32 matrices.
TEST(CpuMedusaHeads, MovedHeadsHoldOnlyThePackedCopyAndEqualTheReference) {
  for (const HeadsCase& c : heads_cases()) {
    const MedusaHeads reference = make_heads(c);
    MedusaHeads copy = reference;  // shares the weights: release_weights copies them
    const MedusaHeads moved = cpu::cpu_medusa_heads(std::move(copy));
    ASSERT_TRUE(moved.weights_released()) << c.name;
    for (const Matrix& m : moved.weights().lm_heads) EXPECT_EQ(m.size(), 0) << c.name;
    for (const std::vector<MedusaBlock>& head : moved.weights().blocks)
      for (const MedusaBlock& b : head) EXPECT_EQ(b.weight.size(), 0) << c.name;
    const Matrix hidden = random_hidden(3, c.config.hidden, c.seed + 7);
    const std::vector<Matrix> want = reference.forward(hidden), got = moved.forward(hidden);
    ASSERT_EQ(got.size(), want.size()) << c.name;
    for (std::size_t k = 0; k < got.size(); ++k) expect_bitwise(want[k], got[k], c.name + ", seed " + std::to_string(c.seed) + ", head " + std::to_string(k));
  }
  const MedusaHeads moved = cpu::cpu_medusa_heads(make_heads(heads_cases().front()));
  const std::string gone = "fp32 weights were given to the engine they were bound to";
  const MedusaHeads on_reference = moved.with_engine(nullptr);
  const Matrix hidden = random_hidden(1, heads_cases().front().config.hidden, 1);
  EXPECT_CONTAINS(error_of([&] { on_reference.forward(hidden); }), "medusa heads forward in the reference: these Medusa heads' " + gone);
  EXPECT_CONTAINS(error_of([&] { medusa_heads_fingerprint(moved); }), gone);
  EXPECT_CONTAINS(error_of([&] { cpu::cpu_medusa_heads(moved); }), "cpu_medusa_heads: ");
  MedusaHeads again = moved;
  EXPECT_CONTAINS(error_of([&] { again.release_weights(); }), "already handed to an engine");
}

// --- the proposer ---------------------------------------------------------------------------------

struct Context {
  std::vector<int32_t> sequence;
  Matrix hidden;  // (committed, H)
  DraftContext ctx;
};
Context make_context(int committed, uint64_t seed, SamplingParams sampling = {}) {
  Context c;
  c.sequence = testing::random_tokens(committed + 1, 97, seed);
  c.hidden = random_hidden(committed, 48, seed + 1);
  c.ctx.sequence = &c.sequence;
  c.ctx.committed = committed;
  c.ctx.prompt_length = committed;
  c.ctx.max_length = 1000;
  c.ctx.final_hidden = &c.hidden;
  c.ctx.sampling = sampling;
  c.ctx.sequence_id = 3;
  return c;
}

class StopAt final : public DraftStopRule {
 public:
  explicit StopAt(int depth) : depth_(depth) {}
  bool draft_at(int depth, double) const override { return depth <= depth_; }
  bool draft_after(int, double, double) const override { return true; }

 private:
  int depth_;
};

TEST(MedusaProposer, AChainDraftsEachHeadsChoiceAtItsPosition) {
  const MedusaHeads heads = make_heads(heads_cases()[3]);  // 5 heads
  SamplingParams coupled;
  coupled.mode = SamplingParams::Mode::coupled;
  coupled.temperature = 0.8;
  coupled.seed = 9;
  SamplingParams sample = coupled;
  sample.mode = SamplingParams::Mode::sample;
  for (const SamplingParams& s : {SamplingParams{}, coupled, sample}) {
    for (int k : {1, 3, 5, 8}) {
      Context c = make_context(6, 40 + k, s);
      MedusaProposer proposer(heads, {MedusaShape::chain, k, {}});
      EXPECT_EQ(proposer.max_nodes(), std::min(k, 5));
      EXPECT_EQ(proposer.max_depth(), std::min(k, 5));
      EXPECT_TRUE(proposer.wants_final_hidden());
      EXPECT_EQ(proposer.name(), "medusa-chain");
      const Proposal p = proposer.propose(c.ctx);
      const std::string where = to_string(s.mode) + ", K " + std::to_string(k) + ", seed " + std::to_string(40 + k);
      EXPECT_EQ(p.drafter_forwards, 1) << where;
      ASSERT_TRUE(p.tree.is_chain()) << where;
      ASSERT_EQ(p.tree.size(), std::min(k, 5)) << where;
      // Head j reads the hidden row that produced the pending token, committed − 1.
      const std::vector<Matrix> logits = heads.forward(c.hidden.row(5));
      for (int j = 0; j < p.tree.size(); ++j) {
        const DraftChoice want = choose_draft_token(logits[static_cast<std::size_t>(j)].data(), 97, s, 3, static_cast<uint32_t>(6 + 1 + j));
        EXPECT_EQ(p.tree.tokens[static_cast<std::size_t>(j)], want.token) << where << ", depth " << j + 1;
        if (s.mode == SamplingParams::Mode::sample) {
          EXPECT_EQ(p.draft_probs[static_cast<std::size_t>(j)], want.q) << where;
        }
      }
      EXPECT_EQ(p.draft_probs.size(), s.mode == SamplingParams::Mode::sample ? static_cast<std::size_t>(p.tree.size()) + 1 : 0u) << where;
    }
  }
  // The policy's budget and stop rule.
  Context c = make_context(4, 7);
  MedusaProposer proposer(heads, {MedusaShape::chain, 5, {}});
  c.ctx.max_depth = 2;
  EXPECT_EQ(proposer.propose(c.ctx).tree.size(), 2);
  c.ctx.max_depth = 0;
  const StopAt stop(3);
  c.ctx.stop = &stop;
  const Proposal p = proposer.propose(c.ctx);
  EXPECT_EQ(p.tree.size(), 3);
  EXPECT_EQ(p.confidences.size(), 3u);
}

TEST(MedusaProposer, TreeNodesAreTheRankedCandidatesOfTheirDepthsHead) {
  const MedusaHeads heads = make_heads(heads_cases()[0]);  // 4 heads
  const TreeChoices choices = {{0}, {1}, {2}, {0, 0}, {0, 1}, {1, 0}, {2, 3}, {0, 0, 0}, {0, 0, 0, 0}, {1, 0, 5}};
  MedusaProposer proposer(heads, {MedusaShape::tree, 4, choices});
  EXPECT_EQ(proposer.name(), "medusa-tree");
  EXPECT_EQ(proposer.max_nodes(), 10);
  EXPECT_EQ(proposer.max_depth(), 4);
  Context c = make_context(5, 21);
  const Proposal p = proposer.propose(c.ctx);
  EXPECT_EQ(p.drafter_forwards, 1);
  const TreeShape shape = make_tree_shape(choices, "test");
  const std::vector<Matrix> logits = heads.forward(c.hidden.row(4));
  ASSERT_EQ(p.tree.size(), shape.size());
  EXPECT_EQ(p.tree.parents, shape.parents);
  for (int n = 0; n < shape.size(); ++n) {
    const int d = shape.depths[static_cast<std::size_t>(n)];
    const std::vector<int32_t> ranked = ranked_candidates(logits[static_cast<std::size_t>(d - 1)].data(), 97, 6);
    EXPECT_EQ(p.tree.tokens[static_cast<std::size_t>(n)], ranked[static_cast<std::size_t>(shape.ranks[static_cast<std::size_t>(n)])])
        << "node " << n << " (depth " << d << ", rank " << shape.ranks[static_cast<std::size_t>(n)] << "), seed 21";
  }
  EXPECT_TRUE(p.draft_probs.empty());
  c.ctx.max_depth = 2;  // the shallower levels only
  EXPECT_EQ(proposer.propose(c.ctx).tree.size(), 7);
}

TEST(MedusaProposerErrors, ShapesTheHeadsCannotDraftAreRefused) {
  const MedusaHeads heads = make_heads(heads_cases()[1]);  // 3 heads
  EXPECT_CONTAINS(error_of([&] { MedusaProposer(heads, {MedusaShape::chain, 0, {}}); }), "medusa chain: K must be >= 1 (got 0)");
  EXPECT_CONTAINS(error_of([&] { MedusaProposer(heads, {MedusaShape::tree, 4, {{0}, {0, 0}, {0, 0, 0}, {0, 0, 0, 0}}}); }),
                  "medusa tree: the tree is 4 deep but the checkpoint has 3 Medusa heads");
  EXPECT_CONTAINS(error_of([&] { MedusaProposer(heads, {MedusaShape::tree, 4, {{0}, {97}}}); }),
                  "the tree uses candidate rank 97 but the vocabulary has only 97 tokens");
  EXPECT_CONTAINS(error_of([&] { MedusaProposer(heads, {MedusaShape::tree, 4, {}}); }), "the tree choices are empty");
  MedusaProposer proposer(heads, {MedusaShape::chain, 2, {}});
  Context c = make_context(3, 5);
  c.ctx.final_hidden = nullptr;
  EXPECT_CONTAINS(error_of([&] { proposer.propose(c.ctx); }), "medusa-chain: the target's final hidden states were not given");
}

// --- decoding -------------------------------------------------------------------------------------

GenerationOptions max_new_tokens(int n) {
  GenerationOptions o;
  o.max_new_tokens = n;
  return o;
}

// A target that counts: its LM head row v is the embedding of v − 1, its layers damped and its
// final norm 1, so that its next token after t is mostly t + 1 (mod V). "Counting" heads (no
// block, projection row v = embedding of v − k − 2) then agree with it often, which exercises
// accepted paths; random heads exercise rejections.
LlamaWeights counting_weights(const ModelConfig& c, uint64_t seed) {
  LlamaWeights w = testing::make_model(c, seed).weights();
  for (LayerWeights& l : w.layers) {
    l.o_proj *= 0.03f;
    l.down_proj *= 0.03f;
  }
  w.norm.setOnes();
  const int V = c.vocab_size;
  w.lm_head.resize(V, c.hidden_size);
  for (int v = 0; v < V; ++v) w.lm_head.row(v) = w.embed_tokens.row((v + V - 1) % V);
  return w;
}

MedusaHeads counting_heads(const ModelConfig& c, const LlamaWeights& target, int K) {
  MedusaConfig config = medusa_config_for(c, K, 0);
  MedusaWeights w = sized_medusa_weights(config);
  const int V = c.vocab_size;
  for (int k = 0; k < K; ++k) {
    w.lm_heads[static_cast<std::size_t>(k)].resize(V, c.hidden_size);
    for (int v = 0; v < V; ++v) w.lm_heads[static_cast<std::size_t>(k)].row(v) = 4.0f * target.embed_tokens.row(((v - k - 2) % V + V) % V);
  }
  return MedusaHeads(config, std::move(w), c, "counting heads");
}

TEST(MedusaMethods, GreedyAndCoupledEqualSequentialOnTheReferenceAndCpuBackends) {
  ModelConfig c = testing::tiny_llama();
  c.eos_token_ids.clear();
  const LlamaWeights weights = counting_weights(c, 2024);
  const Transformer reference(c, weights);
  const cpu::CpuTransformer cpu_target(c, weights, Dtype::F32);
  const MedusaHeads counting = counting_heads(c, weights, 5);
  const MedusaHeads random = random_medusa_heads(medusa_config_for(c, 4, 1), c, 77, 0.08f);
  const std::vector<std::vector<int32_t>> prompts = {{3, 14, 15, 92}, {65}, {2, 7, 1, 8, 28, 18, 28}};
  struct Shape {
    std::string name;
    MedusaOptions options;
  };
  std::vector<Shape> shapes;
  for (int k : {1, 2, 4, 6}) shapes.push_back({"chain K=" + std::to_string(k), {MedusaShape::chain, k, {}}});
  shapes.push_back({"tree small", {MedusaShape::tree, 0, {{0}, {1}, {0, 0}, {0, 1}, {1, 0}}}});
  shapes.push_back({"tree deep", {MedusaShape::tree, 0, {{0}, {1}, {0, 0}, {0, 0, 0}, {0, 0, 1}, {0, 0, 0, 0}}}});
  SamplingParams coupled;
  coupled.mode = SamplingParams::Mode::coupled;
  coupled.temperature = 0.7;
  coupled.seed = 5;
  std::map<std::string, std::pair<double, int>> acceptance;
  for (const SamplingParams& s : {SamplingParams{}, coupled}) {
    for (const std::string backend : {"reference", "cpu"}) {
      const LanguageModel& target = backend == "cpu" ? static_cast<const LanguageModel&>(cpu_target) : reference;
      for (const bool use_counting : {true, false}) {
        const MedusaHeads base = use_counting ? counting : random;
        const MedusaHeads heads = backend == "cpu" ? cpu::cpu_medusa_heads(base) : base;
        for (const Shape& shape : shapes) {
          if (shape.options.shape == MedusaShape::tree && make_tree_shape(shape.options.choices, "t").max_depth() > heads.num_heads()) continue;
          for (std::size_t pi = 0; pi < prompts.size(); ++pi) {
            const std::string where = to_string(s.mode) + " on " + backend + ", " + (use_counting ? "counting" : "random") +
                                      " heads, " + shape.name + ", prompt #" + std::to_string(pi) + ", seed " + std::to_string(s.seed);
            const std::vector<int32_t> expected =
                decode_sequential(reference, prompts[pi], s, max_new_tokens(24)).tokens;
            MedusaProposer proposer(heads, shape.options);
            const auto acceptor = default_acceptor(s);
            const GenerationResult r = decode_speculative(target, proposer, *acceptor, prompts[pi], s, max_new_tokens(24));
            ASSERT_EQ(r.tokens, expected) << where;
            auto& [sum, runs] = acceptance[std::string(use_counting ? "counting " : "random ") + shape.name];
            sum += r.stats.acceptance_length();
            ++runs;
          }
        }
      }
    }
  }
  std::cout << "[ acceptance ] mean tokens per step (bonus counted):\n";
  for (const auto& [name, v] : acceptance) std::cout << "    " << name << ": " << v.first / v.second << "\n";
  EXPECT_GT(acceptance["counting chain K=4"].first / acceptance["counting chain K=4"].second, 2.0);
  EXPECT_GT(acceptance["counting tree deep"].first / acceptance["counting tree deep"].second, 2.0);
}

TEST(MedusaMethods, TheRegistryEntryMakesTheProposerAndItsSchedule) {
  const MethodEntry& e = method_entry("medusa");
  EXPECT_EQ(e.title, "Medusa");
  EXPECT_EQ(e.drafter.kind, DrafterNeed::Kind::medusa_heads);
  EXPECT_TRUE(e.drafter.loads_checkpoint());
  EXPECT_EQ(e.drafter.bundled_dir, "medusa");
  EXPECT_TRUE(e.shapes.chain && e.shapes.static_tree);
  EXPECT_FALSE(e.shapes.dynamic_tree);
  for (double emitted : {1.0, 3.0}) EXPECT_EQ(e.schedule(StepShape{}, CatchUp{emitted, 0}).rows, std::vector<double>{1.0});

  const MedusaHeads heads = make_heads(heads_cases()[0]);
  ProposerInputs in;
  in.target = &target_config();
  in.capacity = 64;
  MethodSpec spec;
  spec.name = "medusa";
  spec.k = 3;
  EXPECT_CONTAINS(error_of([&] { make_method_proposer(spec, in); }), "--method medusa needs Medusa heads");
  in.medusa = &heads;
  EXPECT_EQ(make_method_proposer(spec, in)->name(), "medusa-chain");
  EXPECT_EQ(make_method_proposer(spec, in)->max_nodes(), 3);
  spec.tree = "[[0],[1],[0,0]]";
  EXPECT_EQ(make_method_proposer(spec, in)->name(), "medusa-tree");
  spec.tree = "dynamic";
  EXPECT_THROW(make_method_proposer(spec, in), Error);
}

}  // namespace
}  // namespace specdec
