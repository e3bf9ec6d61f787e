// Llama-family checkpoints: save/load round trips in every dtype, sharded and not, the tensor
// store, deterministic random weights, fingerprints, and every error a user's checkpoint can cause.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/core/half.hpp"
#include "reference/io/checkpoint_reader.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/io/tensor_store.hpp"
#include "reference/model/random_weights.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/scratch_dir.hpp"
#include "tests/reference/weight_pairs.hpp"

namespace specdec {
namespace {

using testing::error_of;
using testing::ScratchDir;
namespace fs = std::filesystem;

ModelConfig tiny_config() {
  ModelConfig c;
  c.hidden_size = 16;
  c.intermediate_size = 24;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 4;
  c.vocab_size = 37;
  c.max_position_embeddings = 64;
  c.bos_token_id = 0;
  c.eos_token_ids = {1};
  return c;
}

struct Case {
  std::string name;
  ModelConfig config;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"llama_untied", tiny_config()});
  ModelConfig tied = tiny_config();
  tied.tie_word_embeddings = true;
  out.push_back({"llama_tied", tied});
  ModelConfig bias = tiny_config();
  bias.attention_bias = bias.o_proj_bias = bias.mlp_bias = true;
  out.push_back({"llama_all_biases", bias});
  ModelConfig qwen2 = tiny_config();
  qwen2.model_type = "qwen2";
  qwen2.architecture = "Qwen2ForCausalLM";
  qwen2.attention_bias = true;
  qwen2.sliding_window = 8;
  qwen2.max_window_layers = 1;
  out.push_back({"qwen2", qwen2});
  ModelConfig qwen3 = tiny_config();
  qwen3.model_type = "qwen3";
  qwen3.architecture = "Qwen3ForCausalLM";
  qwen3.qk_norm = true;
  qwen3.head_dim = 6;  // differs from hidden / heads
  qwen3.tie_word_embeddings = true;
  out.push_back({"qwen3", qwen3});
  return out;
}

// Expects `loaded` to equal `saved` after each element went through `round` (identity for F32).
template <typename Round>
void expect_weights_equal(const LlamaWeights& saved, const LlamaWeights& loaded, Round round, const std::string& label) {
  auto f = testing::equal_after(round, label);
  testing::visit_pair("embed_tokens", saved.embed_tokens, loaded.embed_tokens, f);
  ASSERT_EQ(saved.layers.size(), loaded.layers.size());
  for (std::size_t i = 0; i < saved.layers.size(); ++i)
    testing::for_each_layer_pair(saved.layers[i], loaded.layers[i], "layer " + std::to_string(i) + " ", f);
  testing::visit_pair("norm", saved.norm, loaded.norm, f);
  testing::visit_pair("lm_head", saved.lm_head, loaded.lm_head, f);
}

float identity(float x) { return x; }
float via_f16(float x) { return half_to_float(float_to_half(x)); }
float via_bf16(float x) { return bfloat16_to_float(float_to_bfloat16(x)); }

// --- random weights and fingerprints ------------------------------------------------------------

TEST(RandomWeights, ShapesAndOptionalTensorsFollowTheConfig) {
  for (const Case& k : cases()) {
    const ModelConfig& c = k.config;
    const LlamaWeights w = random_llama_weights(c, 3);
    EXPECT_NO_THROW(check_checkpoint_weights(c, w, k.name)) << k.name;
    EXPECT_EQ(w.lm_head.size() == 0, c.tie_word_embeddings) << k.name;
    for (const LayerWeights& l : w.layers) {
      EXPECT_EQ(l.q_bias.size(), c.attention_bias ? c.q_dim() : 0) << k.name;
      EXPECT_EQ(l.o_bias.size(), c.o_proj_bias ? c.hidden_size : 0) << k.name;
      EXPECT_EQ(l.q_norm.size(), c.qk_norm ? c.head_dim : 0) << k.name;
      EXPECT_EQ(l.down_bias.size(), c.mlp_bias ? c.hidden_size : 0) << k.name;
      EXPECT_EQ(l.q_proj.rows(), c.q_dim()) << k.name;
      EXPECT_EQ(l.o_proj.cols(), c.q_dim()) << k.name;
    }
  }
}

TEST(RandomWeights, DeterministicAndSeedDependent) {
  const ModelConfig c = tiny_config();
  const LlamaWeights a = random_llama_weights(c, 42), b = random_llama_weights(c, 42), d = random_llama_weights(c, 43);
  expect_weights_equal(a, b, identity, "seed 42 twice");
  EXPECT_EQ(weights_fingerprint(a), weights_fingerprint(b));
  EXPECT_NE(weights_fingerprint(a), weights_fingerprint(d));
  EXPECT_NE(a.embed_tokens(0, 0), d.embed_tokens(0, 0));
  // Pinned values: the generator is specified to give these bytes on every platform. A change
  // here changes every bundled model and recorded trace.
  EXPECT_EQ(weights_fingerprint(a), "fnv1a64:49426756ece0af14");
}

TEST(RandomWeights, DistributionMatchesRequest) {
  ModelConfig c = tiny_config();
  c.vocab_size = 2000;
  c.hidden_size = 64;
  c.intermediate_size = 64;
  c.num_attention_heads = 4;
  c.head_dim = 16;
  c.num_hidden_layers = 1;
  const uint64_t seed = 9;
  const LlamaWeights w = random_llama_weights(c, seed, 0.5f);
  const Eigen::ArrayXf e = Eigen::Map<const Eigen::ArrayXf>(w.embed_tokens.data(), w.embed_tokens.size());
  const double n = static_cast<double>(e.size());
  const double mean = e.cast<double>().mean();
  const double var = (e.cast<double>() - mean).square().sum() / n;
  EXPECT_LT(std::fabs(mean), 4 * 0.5 / std::sqrt(n)) << "seed " << seed;
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.01) << "seed " << seed;
  // Box-Muller tails: about 0.27% of samples beyond 3 sigma.
  const double beyond3 = (e.abs() > 1.5f).cast<double>().sum() / n;
  EXPECT_NEAR(beyond3, 0.0027, 0.001) << "seed " << seed;
  // Norm weights scatter around 1 (so a wrong norm changes results) but are not 1.
  const Vector& g = w.layers[0].input_layernorm;
  EXPECT_NEAR(g.mean(), 1.0f, 0.05f);
  EXPECT_GT((g.array() - 1.0f).abs().maxCoeff(), 0.05f);
  EXPECT_THROW(random_llama_weights(c, seed, -1.0f), Error);
}

TEST(Fingerprint, ChangesWithAnyElementOrShape) {
  const LlamaWeights a = random_llama_weights(tiny_config(), 1);
  const std::string fa = weights_fingerprint(a);
  EXPECT_EQ(fa.rfind("fnv1a64:", 0), 0u);
  EXPECT_EQ(fa.size(), 8u + 16u);
  LlamaWeights b = a;
  b.layers[1].down_proj(3, 5) = std::nextafter(b.layers[1].down_proj(3, 5), 1.0f);
  EXPECT_NE(weights_fingerprint(b), fa);
  b = a;
  b.norm(0) = -b.norm(0);
  EXPECT_NE(weights_fingerprint(b), fa);
  // Same bytes, different split between tensors.
  b = a;
  b.lm_head.resize(0, 0);
  EXPECT_NE(weights_fingerprint(b), fa);
}

// --- save / load --------------------------------------------------------------------------------

TEST(Checkpoint, RoundTripEveryDtypeAndFamily) {
  const uint64_t seed = 17;
  for (const Case& k : cases()) {
    const LlamaWeights w = random_llama_weights(k.config, seed);
    for (const auto& [dtype, round, torch] :
         {std::tuple{Dtype::F32, &identity, "float32"}, std::tuple{Dtype::F16, &via_f16, "float16"},
          std::tuple{Dtype::BF16, &via_bf16, "bfloat16"}}) {
      const std::string label = k.name + " " + dtype_name(dtype) + " seed " + std::to_string(seed);
      ScratchDir dir("ckpt");
      const fs::path out = dir / "model";
      save_llama_checkpoint(out, k.config, w, dtype);
      EXPECT_EQ(dir.entries(), std::vector<std::string>{"model"}) << label;  // no temporary left
      const LlamaModel m = load_llama_checkpoint(out);
      ModelConfig expected = k.config;
      expected.torch_dtype = torch;
      EXPECT_TRUE(m.config == expected) << label;
      expect_weights_equal(w, m.weights, round, label);
      const TensorStore store(out);
      for (const std::string& n : store.names()) EXPECT_EQ(store.info(n).dtype, dtype) << label << " " << n;
      EXPECT_EQ(store.has("lm_head.weight"), !k.config.tie_word_embeddings) << label;
      EXPECT_EQ(store.has("model.layers.0.self_attn.q_proj.bias"), k.config.attention_bias) << label;
      EXPECT_EQ(store.has("model.layers.1.self_attn.o_proj.bias"), k.config.o_proj_bias) << label;
      EXPECT_EQ(store.has("model.layers.1.self_attn.k_norm.weight"), k.config.qk_norm) << label;
      EXPECT_EQ(store.has("model.layers.0.mlp.up_proj.bias"), k.config.mlp_bias) << label;
      if (dtype == Dtype::F32) {
        EXPECT_EQ(weights_fingerprint(m.weights), weights_fingerprint(w)) << label;
      }
      // Streamed from the files, a chunk of rows at a time, the fingerprint is the loaded weights'.
      EXPECT_EQ(weights_fingerprint(CheckpointReader(out)), weights_fingerprint(m.weights)) << label;
    }
  }
}

TEST(Checkpoint, ShardedEqualsUnsharded) {
  const uint64_t seed = 23;
  for (const Case& k : cases()) {
    const LlamaWeights w = random_llama_weights(k.config, seed);
    for (Dtype dtype : {Dtype::F32, Dtype::BF16}) {
      const std::string label = k.name + " " + dtype_name(dtype) + " seed " + std::to_string(seed);
      ScratchDir dir("ckpt-shard");
      const std::size_t max_bytes = 1500 * dtype_size(dtype) / 4;
      save_llama_checkpoint(dir / "one", k.config, w, dtype);
      save_llama_checkpoint(dir / "many", k.config, w, dtype, max_bytes);
      EXPECT_FALSE(fs::exists(dir / "many" / "model.safetensors")) << label;
      ASSERT_TRUE(fs::exists(dir / "many" / "model.safetensors.index.json")) << label;

      // Index: every tensor mapped to an existing shard that holds it; total_size adds up.
      const auto index = nlohmann::json::parse(testing::read_text(dir / "many" / "model.safetensors.index.json"));
      std::set<std::string> shards;
      std::size_t total = 0;
      const TensorStore many(dir / "many");
      for (const auto& [name, file] : index["weight_map"].items()) {
        shards.insert(file.get<std::string>());
        total += static_cast<std::size_t>(many.info(name).numel()) * dtype_size(dtype);
        EXPECT_EQ(many.file_of(name).filename().string(), file.get<std::string>()) << label << " " << name;
      }
      EXPECT_EQ(index["metadata"]["total_size"].get<std::size_t>(), total) << label;
      EXPECT_GT(shards.size(), 2u) << label;
      // Named model-0000k-of-0000N.safetensors, k = 1..N.
      for (std::size_t k = 1; k <= shards.size(); ++k) {
        char name[64];
        std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", k, shards.size());
        EXPECT_TRUE(shards.count(name)) << label << " " << name;
      }
      for (const std::string& s : shards) {
        // A shard exceeds the limit only when it holds a single tensor larger than the limit.
        const SafetensorsFile f(dir / "many" / s);
        std::size_t bytes = 0;
        for (const TensorInfo& t : f.tensors()) bytes += t.end - t.begin;
        EXPECT_TRUE(bytes <= max_bytes || f.tensors().size() == 1) << label << " " << s << " " << bytes;
      }
      EXPECT_EQ(TensorStore(dir / "one").names(), many.names()) << label;
      const LlamaModel a = load_llama_checkpoint(dir / "one"), b = load_llama_checkpoint(dir / "many");
      EXPECT_TRUE(a.config == b.config) << label;
      expect_weights_equal(a.weights, b.weights, identity, label);
      EXPECT_EQ(weights_fingerprint(a.weights), weights_fingerprint(b.weights)) << label;
    }
  }
}

TEST(Checkpoint, SaveToPathWithTrailingSlash) {
  ScratchDir dir("ckpt-slash");
  const ModelConfig c = tiny_config();
  const LlamaWeights w = random_llama_weights(c, 4);
  save_llama_checkpoint(dir.path().string() + "/new/", c, w, Dtype::F32);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"new"});
  EXPECT_EQ(weights_fingerprint(load_llama_checkpoint(dir / "new").weights), weights_fingerprint(w));
}

TEST(Checkpoint, ShardLimitAboveTotalWritesOneFile) {
  ScratchDir dir("ckpt-bigshard");
  const ModelConfig c = tiny_config();
  save_llama_checkpoint(dir / "m", c, random_llama_weights(c, 1), Dtype::F16, std::size_t{1} << 30);
  EXPECT_EQ(ScratchDir::entries_of(dir / "m"), (std::vector<std::string>{"config.json", "model.safetensors"}));
}

TEST(Checkpoint, ResavingInAnotherLayoutRemovesStaleWeightFiles) {
  ScratchDir dir("ckpt-resave");
  const ModelConfig c = tiny_config();
  const fs::path out = dir / "m";
  fs::create_directory(out);
  testing::write_text(out / "tokenizer.json", "{}");  // unrelated files stay
  const LlamaWeights w1 = random_llama_weights(c, 1), w2 = random_llama_weights(c, 2), w3 = random_llama_weights(c, 3);
  save_llama_checkpoint(out, c, w1, Dtype::F32);
  save_llama_checkpoint(out, c, w2, Dtype::F32, 2000);
  auto entries = ScratchDir::entries_of(out);
  EXPECT_EQ(std::count(entries.begin(), entries.end(), "model.safetensors"), 0);
  EXPECT_EQ(std::count(entries.begin(), entries.end(), "tokenizer.json"), 1);
  EXPECT_EQ(weights_fingerprint(load_llama_checkpoint(out).weights), weights_fingerprint(w2));
  save_llama_checkpoint(out, c, w3, Dtype::F32);
  EXPECT_EQ(ScratchDir::entries_of(out),
            (std::vector<std::string>{"config.json", "model.safetensors", "tokenizer.json"}));
  EXPECT_EQ(weights_fingerprint(load_llama_checkpoint(out).weights), weights_fingerprint(w3));
}

TEST(Checkpoint, LoadsFromWeightFilePathAndWithoutModelPrefix) {
  ScratchDir dir("ckpt-paths");
  const ModelConfig c = tiny_config();
  const LlamaWeights w = random_llama_weights(c, 5);
  save_llama_checkpoint(dir / "m", c, w, Dtype::F32);
  EXPECT_EQ(weights_fingerprint(load_llama_checkpoint(dir / "m" / "model.safetensors").weights), weights_fingerprint(w));
  save_llama_checkpoint(dir / "s", c, w, Dtype::F32, 3000);
  EXPECT_EQ(weights_fingerprint(load_llama_checkpoint(dir / "s" / "model.safetensors.index.json").weights),
            weights_fingerprint(w));

  // A bare LlamaModel checkpoint: names without "model.", lm_head as usual.
  const SafetensorsFile src(dir / "m" / "model.safetensors");
  SafetensorsWriter bare;
  for (const TensorInfo& t : src.tensors()) {
    const std::string name = t.name.rfind("model.", 0) == 0 ? t.name.substr(6) : t.name;
    bare.add_floats(name, Dtype::F32, t.shape, src.floats(t.name));
  }
  fs::create_directory(dir / "bare");
  fs::copy_file(dir / "m" / "config.json", dir / "bare" / "config.json");
  bare.write(dir / "bare" / "model.safetensors");
  EXPECT_EQ(weights_fingerprint(load_llama_checkpoint(dir / "bare").weights), weights_fingerprint(w));
}

TEST(Checkpoint, GenerationConfigEosReplacesTheConfigs) {
  ScratchDir dir("ckpt-generation-config");
  const ModelConfig c = tiny_config();
  save_llama_checkpoint(dir / "m", c, random_llama_weights(c, 2), Dtype::F32);
  EXPECT_EQ(load_llama_checkpoint(dir / "m").config.eos_token_ids, c.eos_token_ids);  // no generation_config.json
  testing::write_text(dir / "m" / "generation_config.json", "{\"eos_token_id\": [5, 7], \"do_sample\": false}");
  EXPECT_EQ(load_llama_checkpoint(dir / "m").config.eos_token_ids, (std::vector<int>{5, 7}));
  testing::write_text(dir / "m" / "generation_config.json", "{\"eos_token_id\": 9}");
  EXPECT_EQ(load_llama_checkpoint(dir / "m").config.eos_token_ids, (std::vector<int>{9}));
  testing::write_text(dir / "m" / "generation_config.json", "{\"bos_token_id\": 1}");
  EXPECT_EQ(load_llama_checkpoint(dir / "m").config.eos_token_ids, c.eos_token_ids);
  testing::write_text(dir / "m" / "generation_config.json", "{\"eos_token_id\": [5, 100000]}");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "m"); }), "generation_config.json: field 'eos_token_id' must be token ids in [0, ");
  testing::write_text(dir / "m" / "generation_config.json", "{\"eos_token_id\": ");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "m"); }), "generation_config.json: not valid JSON");
}

TEST(Checkpoint, TiedModelIgnoresStoredLmHead) {
  ScratchDir dir("ckpt-tied");
  ModelConfig c = tiny_config();
  c.tie_word_embeddings = true;
  const LlamaWeights w = random_llama_weights(c, 8);
  save_llama_checkpoint(dir / "m", c, w, Dtype::F32);
  // Add an lm_head anyway (some exporters do).
  const SafetensorsFile src(dir / "m" / "model.safetensors");
  SafetensorsWriter with_head;
  for (const TensorInfo& t : src.tensors()) with_head.add_floats(t.name, t.dtype, t.shape, src.floats(t.name));
  with_head.add_floats("lm_head.weight", Dtype::F32, {37, 16}, std::vector<float>(37 * 16, 9.0f));
  with_head.write(dir / "m" / "model.safetensors");
  const LlamaModel m = load_llama_checkpoint(dir / "m");
  EXPECT_EQ(m.weights.lm_head.size(), 0);
  EXPECT_EQ(&m.weights.output_head(), &m.weights.embed_tokens);
  EXPECT_EQ(weights_fingerprint(m.weights), weights_fingerprint(w));
}

// --- errors -------------------------------------------------------------------------------------

// Rewrites dir/model.safetensors without `drop`, optionally replacing one tensor's shape/data.
void rewrite_without(const fs::path& dir, const std::string& drop) {
  SafetensorsWriter w;
  {
    const SafetensorsFile src(dir / "model.safetensors");
    for (const TensorInfo& t : src.tensors()) {
      if (t.name != drop) w.add_floats(t.name, t.dtype, t.shape, src.floats(t.name));
    }
  }
  w.write(dir / "model.safetensors");
}

TEST(CheckpointErrors, MissingTensor) {
  ScratchDir dir("ckpt-missing");
  const ModelConfig c = tiny_config();
  save_llama_checkpoint(dir / "m", c, random_llama_weights(c, 1), Dtype::F16);
  for (const std::string name : {"model.layers.1.mlp.up_proj.weight", "model.norm.weight", "lm_head.weight",
                                 "model.embed_tokens.weight"}) {
    save_llama_checkpoint(dir / "m", c, random_llama_weights(c, 1), Dtype::F16);
    rewrite_without(dir / "m", name);
    const std::string msg = error_of([&] { load_llama_checkpoint(dir / "m"); });
    EXPECT_CONTAINS(msg, "missing tensor '" + name + "'");
    EXPECT_CONTAINS(msg, (dir / "m").string());
  }
  // Qwen2 biases are required by the architecture.
  ModelConfig q = tiny_config();
  q.model_type = "qwen2";
  q.architecture = "Qwen2ForCausalLM";
  q.attention_bias = true;
  save_llama_checkpoint(dir / "q", q, random_llama_weights(q, 1), Dtype::F32);
  rewrite_without(dir / "q", "model.layers.0.self_attn.k_proj.bias");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "q"); }), "missing tensor 'model.layers.0.self_attn.k_proj.bias'");
  // Untied config, no lm_head: the message says why it was expected.
  save_llama_checkpoint(dir / "q", q, random_llama_weights(q, 1), Dtype::F32);
  rewrite_without(dir / "q", "lm_head.weight");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "q"); }),
                  "missing tensor 'lm_head.weight' (config.json has tie_word_embeddings false)");
}

TEST(CheckpointErrors, ShapeNotMatchingConfig) {
  ScratchDir dir("ckpt-shape");
  const ModelConfig c = tiny_config();
  save_llama_checkpoint(dir / "m", c, random_llama_weights(c, 1), Dtype::F32);
  ModelConfig wrong = c;
  wrong.intermediate_size = 32;
  save_model_config(dir / "m" / "config.json", wrong);
  const std::string msg = error_of([&] { load_llama_checkpoint(dir / "m"); });
  EXPECT_CONTAINS(msg, "tensor 'model.layers.0.mlp.gate_proj.weight' has shape [24, 16], expected [32, 16]");
  EXPECT_CONTAINS(msg, "model.safetensors");
  wrong = c;
  wrong.num_key_value_heads = 4;
  save_model_config(dir / "m" / "config.json", wrong);
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "m"); }),
                  "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [8, 16], expected [16, 16]");
  // A config asking for more layers than stored.
  wrong = c;
  wrong.num_hidden_layers = 3;
  save_model_config(dir / "m" / "config.json", wrong);
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "m"); }), "missing tensor 'model.layers.2.");
  // Far more layers than tensors: refused before the layers are allocated.
  wrong.num_hidden_layers = 2000000000;
  save_model_config(dir / "m" / "config.json", wrong);
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "m"); }), "num_hidden_layers 2000000000 but the weights hold only");
}

TEST(CheckpointErrors, MissingOrBrokenConfigAndDirectory) {
  ScratchDir dir("ckpt-config");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "absent"); }), "does not exist");
  const ModelConfig c = tiny_config();
  save_llama_checkpoint(dir / "m", c, random_llama_weights(c, 1), Dtype::F32);
  fs::remove(dir / "m" / "config.json");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "m"); }), "cannot open model config");
  testing::write_text(dir / "m" / "config.json", "{\"model_type\": \"llama\", \"num_attention_heads\": 3, \"hidden_size\": 16}");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "m"); }), "config.json: hidden_size 16 is not divisible");
  fs::create_directory(dir / "empty");
  save_model_config(dir / "empty" / "config.json", c);
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "empty"); }),
                  "has neither model.safetensors nor model.safetensors.index.json");
  // A truncated weight file.
  const fs::path st = dir / "m" / "model.safetensors";
  fs::resize_file(st, fs::file_size(st) - 100);
  save_model_config(dir / "m" / "config.json", c);
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(dir / "m"); }), "beyond the data section");
}

TEST(CheckpointErrors, BrokenShardIndex) {
  ScratchDir dir("ckpt-index");
  const ModelConfig c = tiny_config();
  const fs::path m = dir / "m";
  const fs::path index = m / "model.safetensors.index.json";
  auto fresh = [&] {
    fs::remove_all(m);
    save_llama_checkpoint(m, c, random_llama_weights(c, 1), Dtype::F32, 2000);
    return nlohmann::json::parse(testing::read_text(index));
  };

  fresh();
  testing::write_text(index, "{\"weight_map\": ");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(m); }), "model.safetensors.index.json: not valid JSON");

  fresh();
  testing::write_text(index, "{\"metadata\": {}}");
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(m); }), "must be an object with a 'weight_map' object");

  nlohmann::json j = fresh();
  const std::string norm_shard = j["weight_map"]["model.norm.weight"].get<std::string>();
  const std::string embed_shard = j["weight_map"]["model.embed_tokens.weight"].get<std::string>();
  ASSERT_NE(norm_shard, embed_shard) << "the test needs several shards; got index " << j.dump();
  fs::remove(m / norm_shard);
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(m); }), "shard '" + norm_shard + "' (listed for tensor");

  j = fresh();
  j["weight_map"]["model.norm.weight"] = embed_shard;  // not in that shard
  testing::write_text(index, j.dump());
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(m); }),
                  "tensor 'model.norm.weight' is listed for shard '" + embed_shard + "' but that file does not contain it");

  j = fresh();
  j["weight_map"]["model.norm.weight"] = "../elsewhere.safetensors";
  testing::write_text(index, j.dump());
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(m); }), "expected a file inside the model directory");

  j = fresh();
  j["weight_map"]["model.norm.weight"] = 3;
  testing::write_text(index, j.dump());
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(m); }), "weight_map entry for 'model.norm.weight' must be a file name");

  // A tensor missing from the index (but present in a shard) is missing.
  j = fresh();
  j["weight_map"].erase("model.layers.0.input_layernorm.weight");
  testing::write_text(index, j.dump());
  EXPECT_CONTAINS(error_of([&] { load_llama_checkpoint(m); }), "missing tensor 'model.layers.0.input_layernorm.weight'");
}

TEST(CheckpointErrors, SaveRejectsInconsistentInputAndWritesNothing) {
  ScratchDir dir("ckpt-save-bad");
  const ModelConfig c = tiny_config();
  const LlamaWeights w = random_llama_weights(c, 1);
  const fs::path out = dir / "m";
  auto expect_save_error = [&](const ModelConfig& cfg, const LlamaWeights& weights, Dtype dtype, const std::string& needle) {
    EXPECT_CONTAINS(error_of([&] { save_llama_checkpoint(out, cfg, weights, dtype); }), needle);
    EXPECT_TRUE(dir.entries().empty()) << "after error '" << needle << "' the directory holds files";
  };
  expect_save_error(c, w, Dtype::I64, "saved as F32, F16 or BF16, not I64");
  LlamaWeights bad = w;
  bad.layers.pop_back();
  expect_save_error(c, bad, Dtype::F32, "weights have 1 layers, config num_hidden_layers is 2");
  bad = w;
  bad.layers[0].up_proj.resize(24, 15);
  expect_save_error(c, bad, Dtype::F32, "tensor 'model.layers.0.mlp.up_proj.weight' has shape [24, 15], the config calls for [24, 16]");
  bad = w;
  bad.layers[1].q_bias = Vector::Zero(16);
  expect_save_error(c, bad, Dtype::F32, "carry 'model.layers.1.self_attn.q_proj.bias' but the config has no attention biases");
  bad = w;
  bad.lm_head.resize(0, 0);
  expect_save_error(c, bad, Dtype::F32, "tensor 'lm_head.weight' has shape [0, 0], the config calls for [37, 16]");
  ModelConfig tied = c;
  tied.tie_word_embeddings = true;
  expect_save_error(tied, w, Dtype::F32, "carry 'lm_head.weight' but the config ties the word embeddings");
  ModelConfig invalid = c;
  invalid.num_key_value_heads = 3;
  expect_save_error(invalid, w, Dtype::F32, "not a multiple of num_key_value_heads 3");
  EXPECT_CONTAINS(error_of([&] { save_llama_checkpoint(dir / "no" / "such" / "m", c, w, Dtype::F32); }), "does not exist");
}

// --- tensor store -------------------------------------------------------------------------------

TEST(TensorStore, ShapeChecksAndIntegerTensors) {
  ScratchDir dir("store");
  SafetensorsWriter w;
  std::vector<float> m(6);
  for (int i = 0; i < 6; ++i) m[static_cast<std::size_t>(i)] = static_cast<float>(i);
  w.add_floats("m", Dtype::BF16, {2, 3}, m);
  w.add_floats("v", Dtype::F16, {3}, std::vector<float>{1, 2, 3});
  w.add_floats("mask_hidden", Dtype::F32, {1, 1, 3}, std::vector<float>{4, 5, 6});
  w.add_int64s("d2t", Dtype::I64, {3}, std::vector<int64_t>{0, 5, -1});
  w.add_int64s("t2d", Dtype::BOOL, {4}, std::vector<int64_t>{1, 0, 1, 1});
  w.write(dir / "x.safetensors");
  const TensorStore s(dir / "x.safetensors");
  EXPECT_EQ(s.names(), (std::vector<std::string>{"d2t", "m", "mask_hidden", "t2d", "v"}));
  const Matrix mm = s.matrix("m", 2, 3);
  EXPECT_EQ(mm(1, 2), 5.0f);  // row-major
  EXPECT_EQ(mm(0, 1), 1.0f);
  EXPECT_EQ(s.vector("v", 3), Vector::LinSpaced(3, 1, 3));
  EXPECT_EQ(s.flat_vector("mask_hidden", 3)(2), 6.0f);
  EXPECT_EQ(s.flat_vector("v", 3)(0), 1.0f);
  EXPECT_EQ(s.int64s("d2t", 3), (std::vector<int64_t>{0, 5, -1}));
  EXPECT_EQ(s.int64s("t2d", 4), (std::vector<int64_t>{1, 0, 1, 1}));
  EXPECT_EQ(s.file_of("v").filename(), "x.safetensors");

  EXPECT_CONTAINS(error_of([&] { s.matrix("m", 3, 2); }), "x.safetensors: tensor 'm' has shape [2, 3], expected [3, 2]");
  EXPECT_CONTAINS(error_of([&] { s.vector("m", 6); }), "tensor 'm' has shape [2, 3], expected [6]");
  EXPECT_CONTAINS(error_of([&] { s.vector("mask_hidden", 3); }), "has shape [1, 1, 3], expected [3]");
  EXPECT_CONTAINS(error_of([&] { s.flat_vector("m", 3); }), "has shape [2, 3], expected [3] (optionally");
  EXPECT_CONTAINS(error_of([&] { s.int64s("d2t", 4); }), "has shape [3], expected [4]");
  EXPECT_CONTAINS(error_of([&] { s.int64s("v", 3); }), "expected an integer or BOOL dtype");
  EXPECT_CONTAINS(error_of([&] { s.matrix("absent", 1, 1); }), "missing tensor 'absent'");
  EXPECT_CONTAINS(error_of([&] { TensorStore(dir / "absent"); }), "does not exist");
}

}  // namespace
}  // namespace specdec
