// config.json parsing: Hugging Face defaults per architecture, RoPE scaling in every spelling,
// validation errors, and the round trip through model_config_to_json.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/model/model_config.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec {
namespace {

using nlohmann::json;
const std::string kSource = "models/x/config.json";

ModelConfig parse(const json& j) { return parse_model_config(j, kSource); }

// Expects parsing to fail with a message naming the source file and containing `needle`.
void expect_error(const json& j, const std::string& needle) {
  try {
    parse(j);
    ADD_FAILURE() << "no error for config " << j.dump() << "\n(expected '" << needle << "')";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(kSource), std::string::npos) << "config " << j.dump() << "\nmessage: " << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << "config " << j.dump() << "\nexpected '" << needle
                                                   << "' in message: " << msg;
  }
}

json tiny_llama_json() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", 64},
          {"intermediate_size", 128},
          {"num_hidden_layers", 2},
          {"num_attention_heads", 8},
          {"vocab_size", 100}};
}

json with(json j, const std::string& key, json value) {
  j[key] = std::move(value);
  return j;
}

json without(json j, const std::string& key) {
  j.erase(key);
  return j;
}

// Llama 3.1 8B, abridged from its published config.json.
json llama31_json() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
    "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "pretraining_tp": 1, "rms_norm_eps": 1e-05,
    "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"},
    "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256})");
}

// Qwen2.5-0.5B-Instruct.
json qwen25_json() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
    "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 21,
    "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1", "use_cache": true, "use_sliding_window": false,
    "vocab_size": 151936})");
}

// Qwen3-0.6B.
json qwen3_json() {
  return json::parse(R"({
    "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
    "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null,
    "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_cache": true,
    "use_sliding_window": false, "vocab_size": 151936})");
}

// Mistral-7B-v0.1.
json mistral_json() {
  return json::parse(R"({
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2,
    "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mistral",
    "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 32000})");
}

TEST(ModelConfig, LlamaDefaultsAsHuggingFace) {
  const ModelConfig c = parse(tiny_llama_json());
  EXPECT_EQ(c.architecture, "LlamaForCausalLM");
  EXPECT_EQ(c.num_key_value_heads, 8);  // = num_attention_heads
  EXPECT_EQ(c.head_dim, 8);             // = hidden_size / num_attention_heads
  EXPECT_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::none);
  EXPECT_EQ(c.max_position_embeddings, 2048);
  EXPECT_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_EQ(c.bos_token_id, 1);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{2});
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_FALSE(c.attention_bias || c.o_proj_bias || c.mlp_bias || c.qk_norm);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.hidden_act, "silu");
  // Keys omitted by to_diff_dict take the class defaults.
  const ModelConfig d = parse(json{{"model_type", "llama"}});
  EXPECT_EQ(d.hidden_size, 4096);
  EXPECT_EQ(d.intermediate_size, 11008);
  EXPECT_EQ(d.num_hidden_layers, 32);
  EXPECT_EQ(d.vocab_size, 32000);
  // Explicit nulls mean "derive".
  const ModelConfig n = parse(with(with(tiny_llama_json(), "num_key_value_heads", nullptr), "head_dim", nullptr));
  EXPECT_EQ(n.num_key_value_heads, 8);
  EXPECT_EQ(n.head_dim, 8);
}

TEST(ModelConfig, Llama31) {
  const ModelConfig c = parse(llama31_json());
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.rope_scaling.type, RopeScaling::Type::llama3);
  EXPECT_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_EQ(c.rope_scaling.low_freq_factor, 1.0);
  EXPECT_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int>{128001, 128008, 128009}));
  EXPECT_TRUE(c.is_eos(128008));
  EXPECT_FALSE(c.is_eos(128000));
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_EQ(c.torch_dtype, "bfloat16");
  EXPECT_EQ(c.max_position_embeddings, 131072);
}

TEST(ModelConfig, LlamaAttentionAndMlpBias) {
  const ModelConfig c = parse(with(with(tiny_llama_json(), "attention_bias", true), "mlp_bias", true));
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.o_proj_bias);  // Llama's attention_bias covers o_proj too
  EXPECT_TRUE(c.mlp_bias);
}

TEST(ModelConfig, Qwen2) {
  const ModelConfig c = parse(qwen25_json());
  EXPECT_EQ(c.model_type, "qwen2");
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.sliding_window, 0);  // use_sliding_window false
  EXPECT_EQ(c.layer_sliding_window(23), 0);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.num_key_value_heads, 2);
  EXPECT_EQ(c.bos_token_id, 151643);
  EXPECT_EQ(c.eos_token_ids, std::vector<int>{151645});
  EXPECT_EQ(c.rope_theta, 1e6);

  const ModelConfig w = parse(with(qwen25_json(), "use_sliding_window", true));
  EXPECT_EQ(w.sliding_window, 32768);
  EXPECT_EQ(w.max_window_layers, 21);
  EXPECT_EQ(w.layer_sliding_window(20), 0);
  EXPECT_EQ(w.layer_sliding_window(21), 32768);

  // Class defaults: 32 KV heads when absent, no special tokens.
  const ModelConfig d = parse(json{{"model_type", "qwen2"}, {"num_attention_heads", 64}, {"hidden_size", 4096}});
  EXPECT_EQ(d.num_key_value_heads, 32);
  EXPECT_EQ(d.bos_token_id, -1);
  EXPECT_TRUE(d.eos_token_ids.empty());
  EXPECT_EQ(d.vocab_size, 151936);
}

// transformers v5 writes Qwen2/Qwen3's per-layer attention kinds as layer_types and follows the
// list over max_window_layers; a list in that form decides the window, any other is refused.
TEST(ModelConfig, Qwen2LayerTypes) {
  const json windowed = with(with(qwen25_json(), "use_sliding_window", true), "num_hidden_layers", 4);
  auto types = [](std::vector<std::string> t) { return json(t); };
  const std::string F = "full_attention", S = "sliding_attention";
  // max_window_layers says 21 (no layer of 4 slides); the list says layers 1.. slide: the list wins.
  const ModelConfig c = parse(with(windowed, "layer_types", types({F, S, S, S})));
  EXPECT_EQ(c.max_window_layers, 1);
  EXPECT_EQ(c.layer_sliding_window(0), 0);
  EXPECT_EQ(c.layer_sliding_window(1), 32768);
  EXPECT_EQ(parse(with(windowed, "layer_types", types({S, S, S, S}))).layer_sliding_window(0), 32768);
  const ModelConfig full = parse(with(windowed, "layer_types", types({F, F, F, F})));
  for (int l = 0; l < 4; ++l) EXPECT_EQ(full.layer_sliding_window(l), 0);
  // The list transformers computes without a window (all full) changes nothing.
  const ModelConfig off = parse(with(with(qwen25_json(), "num_hidden_layers", 4), "layer_types", types({F, F, F, F})));
  EXPECT_EQ(off.sliding_window, 0);
  // Refused: patterns specdec cannot express, unknown kinds, wrong lengths, a sliding layer without a window.
  expect_error(with(windowed, "layer_types", types({S, F, S, F})), "field 'layer_types' has full_attention layer 1 after sliding_attention layer 0");
  expect_error(with(windowed, "layer_types", types({F, F, "chunked_attention", F})), "field 'layer_types[2]'");
  expect_error(with(windowed, "layer_types", types({F, S})), "one attention type per layer (4)");
  expect_error(with(with(qwen25_json(), "num_hidden_layers", 2), "layer_types", types({F, S})), "no window is set");
  // Mistral and Llama have no per-layer kinds; transformers ignores the field there.
  EXPECT_EQ(parse(with(mistral_json(), "layer_types", types({S}))).sliding_window, 4096);
}

TEST(ModelConfig, Qwen3) {
  const ModelConfig c = parse(qwen3_json());
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(c.head_dim, 128);  // not hidden_size / heads = 64
  EXPECT_EQ(c.q_dim(), 2048);
  EXPECT_EQ(c.kv_dim(), 1024);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.rope_theta, 1e6);  // integer in the file
  const ModelConfig b = parse(with(qwen3_json(), "attention_bias", true));
  EXPECT_TRUE(b.attention_bias);
  EXPECT_TRUE(b.o_proj_bias);
  // Qwen3Config's head_dim default is 128 whatever hidden_size / heads is.
  EXPECT_EQ(parse(without(qwen3_json(), "head_dim")).head_dim, 128);
}

TEST(ModelConfig, Mistral) {
  const ModelConfig c = parse(mistral_json());
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.layer_sliding_window(0), 4096);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(parse(with(mistral_json(), "sliding_window", nullptr)).sliding_window, 0);
  EXPECT_EQ(parse(without(mistral_json(), "sliding_window")).sliding_window, 4096);  // class default
  EXPECT_EQ(parse(without(mistral_json(), "num_key_value_heads")).num_key_value_heads, 8);
  // MistralAttention has no biases whatever the file says.
  EXPECT_FALSE(parse(with(mistral_json(), "attention_bias", true)).attention_bias);
}

TEST(ModelConfig, ModelTypeFromArchitectures) {
  const ModelConfig c = parse(without(qwen3_json(), "model_type"));
  EXPECT_EQ(c.model_type, "qwen3");
  EXPECT_TRUE(c.qk_norm);
  EXPECT_EQ(parse(without(tiny_llama_json(), "architectures")).architecture, "LlamaForCausalLM");
}

TEST(ModelConfig, EosAndBosForms) {
  EXPECT_EQ(parse(with(tiny_llama_json(), "eos_token_id", 7)).eos_token_ids, std::vector<int>{7});
  EXPECT_EQ(parse(with(tiny_llama_json(), "eos_token_id", {7, 9})).eos_token_ids, (std::vector<int>{7, 9}));
  EXPECT_TRUE(parse(with(tiny_llama_json(), "eos_token_id", nullptr)).eos_token_ids.empty());
  EXPECT_TRUE(parse(with(tiny_llama_json(), "eos_token_id", json::array())).eos_token_ids.empty());
  EXPECT_EQ(parse(with(tiny_llama_json(), "bos_token_id", nullptr)).bos_token_id, -1);
  expect_error(with(tiny_llama_json(), "eos_token_id", {7, "x"}), "field 'eos_token_id[1]' must be an integer");
  expect_error(with(tiny_llama_json(), "eos_token_id", -3), "'eos_token_id' must not be negative");
}

TEST(ModelConfig, RopeScalingBothSpellings) {
  const ModelConfig lin = parse(with(tiny_llama_json(), "rope_scaling", {{"type", "linear"}, {"factor", 2.0}}));
  EXPECT_EQ(lin.rope_scaling.type, RopeScaling::Type::linear);
  EXPECT_EQ(lin.rope_scaling.factor, 2.0);
  const ModelConfig lin2 = parse(with(tiny_llama_json(), "rope_scaling", {{"rope_type", "linear"}, {"factor", 4}}));
  EXPECT_EQ(lin2.rope_scaling.type, RopeScaling::Type::linear);
  EXPECT_EQ(lin2.rope_scaling.factor, 4.0);
  // rope_type wins over the legacy type, as in Hugging Face.
  const ModelConfig both =
      parse(with(tiny_llama_json(), "rope_scaling", {{"type", "linear"}, {"rope_type", "dynamic"}, {"factor", 2.0}}));
  EXPECT_EQ(both.rope_scaling.type, RopeScaling::Type::dynamic);
  // dynamic: the original length defaults to max_position_embeddings.
  const ModelConfig dyn = parse(with(tiny_llama_json(), "rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}));
  EXPECT_EQ(dyn.rope_scaling.type, RopeScaling::Type::dynamic);
  EXPECT_EQ(dyn.rope_scaling.original_max_position_embeddings, 2048);
  const ModelConfig dyn2 = parse(with(tiny_llama_json(), "rope_scaling",
                                      {{"type", "dynamic"}, {"factor", 2.0}, {"original_max_position_embeddings", 512}}));
  EXPECT_EQ(dyn2.rope_scaling.original_max_position_embeddings, 512);
  // "default" means no scaling.
  const ModelConfig def = parse(with(tiny_llama_json(), "rope_scaling", {{"rope_type", "default"}, {"factor", 3.0}}));
  EXPECT_EQ(def.rope_scaling, RopeScaling{});
  EXPECT_EQ(parse(with(tiny_llama_json(), "rope_scaling", nullptr)).rope_scaling, RopeScaling{});
}

TEST(ModelConfig, RopeParameters) {
  json j = without(llama31_json(), "rope_scaling");
  j.erase("rope_theta");
  j["rope_parameters"] = {{"rope_type", "llama3"},           {"rope_theta", 500000.0}, {"factor", 8.0},
                          {"low_freq_factor", 1.0},         {"high_freq_factor", 4.0},
                          {"original_max_position_embeddings", 8192}};
  const ModelConfig c = parse(j);
  EXPECT_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling, parse(llama31_json()).rope_scaling);

  const ModelConfig plain = parse(with(tiny_llama_json(), "rope_parameters", {{"rope_type", "default"}, {"rope_theta", 1e6}}));
  EXPECT_EQ(plain.rope_theta, 1e6);
  EXPECT_EQ(plain.rope_scaling.type, RopeScaling::Type::none);
  // Without rope_theta inside, the top-level value (or 10000) applies.
  EXPECT_EQ(parse(with(tiny_llama_json(), "rope_parameters", {{"rope_type", "default"}})).rope_theta, 10000.0);
  EXPECT_EQ(parse(with(with(tiny_llama_json(), "rope_theta", 2e5), "rope_parameters", {{"rope_type", "default"}})).rope_theta,
            2e5);
  // Both forms present: fine if they agree, an error if they do not.
  json agree = llama31_json();
  agree["rope_parameters"] = j["rope_parameters"];
  EXPECT_EQ(parse(agree).rope_scaling.type, RopeScaling::Type::llama3);
  agree["rope_parameters"]["factor"] = 16.0;
  expect_error(agree, "'rope_scaling' and 'rope_parameters' describe different RoPE scalings");
  expect_error(with(with(tiny_llama_json(), "rope_theta", 2e5), "rope_parameters", {{"rope_theta", 1e6}}),
               "'rope_theta' (200000.0) and 'rope_parameters.rope_theta' (1000000.0) disagree");
  expect_error(with(tiny_llama_json(), "rope_parameters",
                    {{"full_attention", {{"rope_type", "default"}}}, {"sliding_attention", {{"rope_type", "default"}}}}),
               "per-layer-type rope parameters");
  expect_error(with(tiny_llama_json(), "rope_parameters", {{"rope_type", "default"}, {"partial_rotary_factor", 0.5}}),
               "partial_rotary_factor");
}

TEST(ModelConfigErrors, RopeScaling) {
  expect_error(with(tiny_llama_json(), "rope_scaling", {{"type", "yarn"}, {"factor", 4.0}}),
               "rope_type 'yarn' is not supported");
  expect_error(with(tiny_llama_json(), "rope_scaling", {{"type", "linear"}}),
               "'rope_scaling' of rope_type 'linear' is missing 'factor'");
  expect_error(with(tiny_llama_json(), "rope_scaling", {{"type", "linear"}, {"factor", 0.5}}),
               "'rope_scaling.factor' must be >= 1");
  expect_error(with(tiny_llama_json(), "rope_scaling", {{"type", "linear"}, {"factor", "2"}}),
               "'rope_scaling.factor' must be a number");
  expect_error(with(tiny_llama_json(), "rope_scaling", "linear"), "'rope_scaling' must be an object or null");
  json r = llama31_json()["rope_scaling"];
  r.erase("low_freq_factor");
  expect_error(with(llama31_json(), "rope_scaling", r), "of rope_type 'llama3' is missing 'low_freq_factor'");
  r = llama31_json()["rope_scaling"];
  r["high_freq_factor"] = 1.0;
  expect_error(with(llama31_json(), "rope_scaling", r), "'rope_scaling.high_freq_factor' (1.000000) must be greater than low_freq_factor");
  r = llama31_json()["rope_scaling"];
  r["original_max_position_embeddings"] = 0;
  expect_error(with(llama31_json(), "rope_scaling", r), "'rope_scaling.original_max_position_embeddings' must be positive");
}

TEST(ModelConfigErrors, InconsistentShapes) {
  expect_error(with(tiny_llama_json(), "num_attention_heads", 7),
               "hidden_size 64 is not divisible by num_attention_heads 7 and no 'head_dim' is given");
  expect_error(with(tiny_llama_json(), "num_key_value_heads", 3),
               "num_attention_heads 8 is not a multiple of num_key_value_heads 3");
  expect_error(with(tiny_llama_json(), "hidden_size", -64), "must be positive");
  expect_error(with(tiny_llama_json(), "num_hidden_layers", 0), "field 'num_hidden_layers' must be positive, got 0");
  expect_error(with(tiny_llama_json(), "intermediate_size", -1), "field 'intermediate_size' must be positive");
  expect_error(with(tiny_llama_json(), "vocab_size", 0), "field 'vocab_size' must be positive");
  expect_error(with(tiny_llama_json(), "num_attention_heads", 0), "field 'num_attention_heads' must be positive");
  expect_error(with(tiny_llama_json(), "num_key_value_heads", 0), "field 'num_key_value_heads' must be positive");
  expect_error(with(tiny_llama_json(), "head_dim", 7), "field 'head_dim' must be even");
  expect_error(with(tiny_llama_json(), "head_dim", -8), "field 'head_dim' must be positive");
  expect_error(with(tiny_llama_json(), "max_position_embeddings", 0), "field 'max_position_embeddings' must be positive");
  expect_error(with(with(tiny_llama_json(), "vocab_size", 2000000000), "hidden_size", 1 << 20),
               "implausibly large");
  // An explicit head_dim lifts the divisibility requirement (as Qwen3 does).
  EXPECT_EQ(parse(with(with(tiny_llama_json(), "num_attention_heads", 6), "head_dim", 16)).q_dim(), 96);
}

TEST(ModelConfigErrors, WrongTypesAndValues) {
  expect_error(with(tiny_llama_json(), "vocab_size", "100"), "field 'vocab_size' must be an integer, got string");
  expect_error(with(tiny_llama_json(), "hidden_size", 64.5), "field 'hidden_size' must be an integer, got number");
  expect_error(with(tiny_llama_json(), "hidden_size", 1e12), "field 'hidden_size' must be an integer");
  expect_error(with(tiny_llama_json(), "hidden_size", 10000000000LL), "field 'hidden_size' = 10000000000 is");
  expect_error(with(tiny_llama_json(), "tie_word_embeddings", "yes"), "field 'tie_word_embeddings' must be true or false");
  expect_error(with(tiny_llama_json(), "rms_norm_eps", 0.0), "field 'rms_norm_eps' must be a positive number");
  expect_error(with(tiny_llama_json(), "rope_theta", -1.0), "field 'rope_theta' must be a positive number");
  expect_error(with(tiny_llama_json(), "hidden_act", "gelu"), "field 'hidden_act' is 'gelu'; only 'silu' is supported");
  EXPECT_EQ(parse(with(tiny_llama_json(), "hidden_act", "swish")).hidden_act, "swish");  // the same function in HF
  expect_error(with(tiny_llama_json(), "model_type", "gemma"), "model_type 'gemma' is not supported");
  expect_error(with(tiny_llama_json(), "architectures", json::array()), "'architectures' must be a non-empty list");
  expect_error(json{{"hidden_size", 64}}, "neither 'model_type' nor a known 'architectures' entry");
  expect_error(json::array({1, 2}), "config must be a JSON object");
  expect_error(with(mistral_json(), "sliding_window", -5), "field 'sliding_window' must be positive or null");
}

TEST(ModelConfigErrors, ValidateRejectsFlagsTheArchitectureCannotExpress) {
  ModelConfig c = parse(qwen25_json());
  c.attention_bias = false;
  EXPECT_THROW(validate_model_config(c, kSource), Error);
  c = parse(tiny_llama_json());
  c.qk_norm = true;
  EXPECT_THROW(validate_model_config(c, kSource), Error);
  c = parse(tiny_llama_json());
  c.attention_bias = true;  // without o_proj_bias: not a Llama configuration
  EXPECT_THROW(validate_model_config(c, kSource), Error);
  c = parse(mistral_json());
  c.mlp_bias = true;
  EXPECT_THROW(validate_model_config(c, kSource), Error);
  c = parse(qwen3_json());
  c.qk_norm = false;
  EXPECT_THROW(validate_model_config(c, kSource), Error);
}

TEST(ModelConfig, RoundTripThroughJson) {
  std::vector<std::pair<std::string, json>> cases = {
      {"tiny_llama", tiny_llama_json()},
      {"llama31", llama31_json()},
      {"llama_bias", with(with(tiny_llama_json(), "attention_bias", true), "mlp_bias", true)},
      {"linear", with(tiny_llama_json(), "rope_scaling", {{"type", "linear"}, {"factor", 2.5}})},
      {"dynamic", with(tiny_llama_json(), "rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}})},
      {"no_eos", with(with(tiny_llama_json(), "eos_token_id", nullptr), "bos_token_id", nullptr)},
      {"tied", with(tiny_llama_json(), "tie_word_embeddings", true)},
      {"qwen25", qwen25_json()},
      {"qwen25_window", with(qwen25_json(), "use_sliding_window", true)},
      {"qwen3", qwen3_json()},
      {"qwen3_bias", with(qwen3_json(), "attention_bias", true)},
      {"mistral", mistral_json()},
      {"mistral_no_window", with(mistral_json(), "sliding_window", nullptr)},
  };
  for (const auto& [name, j] : cases) {
    const ModelConfig c = parse(j);
    const json out = model_config_to_json(c);
    const ModelConfig back = parse_model_config(out, "round trip of " + name);
    EXPECT_TRUE(back == c) << "case " << name << "\nwritten: " << out.dump();
    // Serialising again is stable.
    EXPECT_EQ(model_config_to_json(back), out) << "case " << name;
  }
  // What Hugging Face would write: eos as an int when single, Qwen2 without attention_bias.
  const json q = model_config_to_json(parse(qwen25_json()));
  EXPECT_EQ(q["eos_token_id"], 151645);
  EXPECT_FALSE(q.contains("attention_bias"));
  EXPECT_EQ(q["use_sliding_window"], false);
  EXPECT_EQ(q["architectures"], json::array({"Qwen2ForCausalLM"}));
  const json l = model_config_to_json(parse(llama31_json()));
  EXPECT_EQ(l["eos_token_id"], json({128001, 128008, 128009}));
  EXPECT_EQ(l["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(l["torch_dtype"], "bfloat16");
  EXPECT_EQ(model_config_to_json(parse(mistral_json()))["sliding_window"], 4096);
  EXPECT_TRUE(model_config_to_json(parse(tiny_llama_json()))["rope_scaling"].is_null());
}

TEST(ModelConfig, SaveAndLoadFile) {
  testing::ScratchDir dir("config");
  const ModelConfig c = parse(llama31_json());
  save_model_config(dir / "config.json", c);
  EXPECT_TRUE(load_model_config(dir / "config.json") == c);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"config.json"});  // no temporary left

  testing::write_text(dir / "broken.json", "{\"hidden_size\": ");
  try {
    load_model_config(dir / "broken.json");
    ADD_FAILURE() << "no error for invalid JSON";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json: not valid JSON"), std::string::npos) << e.what();
  }
  try {
    load_model_config(dir / "absent.json");
    ADD_FAILURE() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open model config"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("absent.json"), std::string::npos) << e.what();
  }
  // Errors in a loaded file name it.
  testing::write_text(dir / "bad.json", with(tiny_llama_json(), "num_key_value_heads", 3).dump());
  try {
    load_model_config(dir / "bad.json");
    ADD_FAILURE() << "no error for an inconsistent config";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json: num_attention_heads 8 is not a multiple"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace specdec
