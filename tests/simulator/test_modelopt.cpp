// NVIDIA ModelOpt checkpoints (NVFP4, FP8, mixed precision) and the per-class weight precision
// they set: parsing, exclusion patterns, refusals, the total size of a published checkpoint, the
// FP4 peak and the KV-cache dtype.
#include <gtest/gtest.h>

#include <string>

#include "simulator/cost_model.hpp"
#include "simulator/model_shape.hpp"
#include "simulator/predictor.hpp"
#include "simulator/spec_json.hpp"
#include "simulator/spec_library.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

constexpr double kNvfp4 = 4.5 / 8.0;

// Llama-3.3-70B's config.json (meta-llama/Llama-3.3-70B-Instruct: the Llama-3.1-70B shape).
nlohmann::json llama70b() {
  return {{"hidden_size", 8192},   {"intermediate_size", 28672}, {"num_hidden_layers", 80},
          {"num_attention_heads", 64}, {"num_key_value_heads", 8}, {"vocab_size", 128256},
          {"tie_word_embeddings", false}, {"torch_dtype", "bfloat16"}};
}

nlohmann::json deepseek_r1() {
  SpecLibrary lib;
  nlohmann::json j = read_json_file(lib.find("models", "deepseek-r1"), "model spec");
  j.erase("quantization_config");
  j.erase("name");
  return j;
}

ModelShape with_quant(nlohmann::json j, const nlohmann::json& q) {
  j["quantization_config"] = q;
  return parse_model_shape(j, "m.json");
}

void expect_classes(const ModelShape& m, const std::string& dtype,
                    std::initializer_list<std::pair<WeightClass, double>> expected, const std::string& what) {
  const WeightBytes w = weight_bytes_of(m, dtype);
  for (const auto& [c, bytes] : expected) EXPECT_DOUBLE_EQ(w[c], bytes) << what << ": " << weight_class_name(c);
}

// config.json's form (quant_method modelopt, "ignore"): every linear layer NVFP4 but the LM head.
TEST(ModelOpt, Nvfp4ConfigJsonFormWithIgnore) {
  const ModelShape m = with_quant(llama70b(), {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"},
                                               {"group_size", 16}, {"ignore", {"lm_head"}}});
  EXPECT_EQ(m.dtype, "nvfp4");
  expect_classes(m, "nvfp4",
                 {{WeightClass::attention, kNvfp4}, {WeightClass::dense_mlp, kNvfp4}, {WeightClass::lm_head, 2.0},
                  {WeightClass::embedding, 2.0}, {WeightClass::other, 2.0}},
                 "Llama NVFP4, lm_head ignored");
  EXPECT_EQ(weight_compute_dtypes(m, "nvfp4")[std::size_t(WeightClass::attention)], "nvfp4");
  expect_classes(m, "bf16", {{WeightClass::attention, 2.0}, {WeightClass::dense_mlp, 2.0}},
                 "--dtype bf16 prices a dequantised copy");
  EXPECT_DOUBLE_EQ(m.kv_cache_bytes, 0.0) << "no kv_cache_quant_algo: the activations' width";
}

// hf_quant_config.json's form: fields under "quantization", "exclude_modules", lower-case algo,
// kv_cache_quant_algo FP8.
TEST(ModelOpt, HfQuantConfigFormWithExcludeModulesAndFp8Kv) {
  const ModelShape m = with_quant(
      llama70b(), {{"quant_method", "modelopt"},
                   {"quantization", {{"quant_algo", "nvfp4"}, {"kv_cache_quant_algo", "FP8"}, {"group_size", 16},
                                     {"exclude_modules", {"lm_head", "model.layers.0.self_attn*"}}}}});
  // Layer 0's attention of 80 stays BF16: the class is the parameter-weighted mean.
  expect_classes(m, "nvfp4", {{WeightClass::attention, (79 * kNvfp4 + 2.0) / 80}, {WeightClass::dense_mlp, kNvfp4}},
                 "layer 0 attention excluded");
  EXPECT_EQ(weight_compute_dtypes(m, "nvfp4")[std::size_t(WeightClass::attention)], "")
      << "a class of mixed precision takes the run's peak";
  EXPECT_DOUBLE_EQ(m.kv_cache_bytes, 1.0) << "kv_cache_quant_algo FP8";
  // kv_cache_scheme {type float, num_bits 8} (config.json's form) is FP8 too.
  const ModelShape s = with_quant(llama70b(), {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"},
                                               {"kv_cache_scheme", {{"type", "float"}, {"num_bits", 8}}}});
  EXPECT_DOUBLE_EQ(s.kv_cache_bytes, 1.0) << "kv_cache_scheme float 8";
}

TEST(ModelOpt, Fp8AlgorithmIsOneBytePerWeight) {
  const ModelShape m = with_quant(llama70b(), {{"quant_method", "modelopt"}, {"quant_algo", "FP8"},
                                               {"ignore", {"lm_head"}}});
  EXPECT_EQ(m.dtype, "fp8");
  expect_classes(m, "fp8", {{WeightClass::attention, 1.0}, {WeightClass::dense_mlp, 1.0}, {WeightClass::lm_head, 2.0}},
                 "ModelOpt FP8");
}

// MIXED_PRECISION: quantized_layers names each module's algorithm (experts by any index); a module
// it does not list stays unquantised.
TEST(ModelOpt, MixedPrecisionQuantizedLayers) {
  nlohmann::json layers = nlohmann::json::object();
  for (int i = 0; i < 61; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    layers[l + "self_attn.o_proj"] = {{"quant_algo", "FP8"}};
    if (i >= 3) {
      for (const char* n : {"gate_proj", "up_proj", "down_proj"})
        layers[l + "mlp.experts.17." + n] = {{"quant_algo", "NVFP4"}, {"group_size", 16}};
    }
  }
  const ModelShape m = with_quant(deepseek_r1(), {{"quant_method", "modelopt"}, {"quant_algo", "MIXED_PRECISION"},
                                                  {"quantized_layers", layers}, {"kv_cache_quant_algo", nullptr}});
  EXPECT_EQ(m.dtype, "nvfp4");
  const double o = 128.0 * 128 * 7168;  // o_proj of the attention's parameters, the rest BF16
  const ModelShape plain = parse_model_shape(deepseek_r1(), "plain.json");
  const double attention = plain.attention_params_per_layer() - 1536 - 512;  // its two norms are not linear layers
  expect_classes(m, "nvfp4",
                 {{WeightClass::routed_experts, kNvfp4}, {WeightClass::shared_experts, 2.0},
                  {WeightClass::dense_mlp, 2.0}, {WeightClass::router, 2.0},
                  {WeightClass::attention, (o * 1.0 + (attention - o) * 2.0) / attention}},
                 "mixed: NVFP4 experts, FP8 o_proj");
}

// The bundled spec of TensorRT-LLM's DeepSeek-R1 recipe: attention, router, LM head and the MTP
// layer excluded; dense and MoE FFNs NVFP4.
TEST(ModelOpt, DeepSeekR1ExclusionPatterns) {
  SpecLibrary lib;
  const ModelShape m = lib.model("deepseek-r1-nvfp4");
  EXPECT_EQ(m.dtype, "nvfp4");
  expect_classes(m, "nvfp4",
                 {{WeightClass::attention, 2.0}, {WeightClass::dense_mlp, kNvfp4}, {WeightClass::routed_experts, kNvfp4},
                  {WeightClass::shared_experts, kNvfp4}, {WeightClass::router, 2.0}, {WeightClass::lm_head, 2.0},
                  {WeightClass::embedding, 2.0}, {WeightClass::mtp, 2.0}},
                 "deepseek-r1-nvfp4");
  // Without the MTP pattern the module takes the target's classes (0 = the target's).
  nlohmann::json j = deepseek_r1();
  const ModelShape all = with_quant(j, {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"},
                                        {"exclude_modules", {"lm_head", "*mlp.gate"}}});
  expect_classes(all, "nvfp4", {{WeightClass::mtp, 0.0}, {WeightClass::attention, kNvfp4}, {WeightClass::router, 2.0}},
                 "attention quantised, MTP with the target");
  // Dense layers 0-2 excluded by a prefix pattern, as ModelOpt writes 'module_path*'.
  const ModelShape dense = with_quant(j, {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"},
                                          {"exclude_modules", {"model.layers.0.mlp*", "model.layers.1.mlp*",
                                                               "model.layers.2.mlp*"}}});
  expect_classes(dense, "nvfp4", {{WeightClass::dense_mlp, 2.0}, {WeightClass::routed_experts, kNvfp4}},
                 "dense layers excluded");
}

TEST(ModelOpt, RefusalsNameTheField) {
  const nlohmann::json base = {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"}};
  auto err = [&](nlohmann::json q, nlohmann::json model) {
    return error_of([&] { with_quant(model, q); });
  };
  struct Case {
    const char* what;
    nlohmann::json patch;
    const char* says;
  };
  const Case cases[] = {
      {"unmappable exclusion", {{"exclude_modules", {"lm_head", "*vision_tower*"}}}, "'*vision_tower*'"},
      {"exclusions not a list", {{"ignore", "lm_head"}}, "'ignore' must be a list"},
      {"pattern not a string", {{"ignore", {3}}}, "not a module name pattern"},
      {"unknown algorithm", {{"quant_algo", "INT4_AWQ"}}, "'INT4_AWQ' is not priced"},
      {"no algorithm", {{"quant_algo", nullptr}}, "quant_algo"},
      {"group size 0", {{"group_size", 0}}, "'group_size' must be in [1, 65536]"},
      {"unknown KV algorithm", {{"kv_cache_quant_algo", "INT8"}}, "kv_cache_quant_algo 'INT8'"},
      {"unknown KV scheme", {{"kv_cache_scheme", {{"type", "int"}, {"num_bits", 8}}}}, "kv_cache_scheme"},
      {"mixed without table", {{"quant_algo", "MIXED_PRECISION"}}, "needs a non-empty 'quantized_layers'"},
      {"mixed, unknown module",
       {{"quant_algo", "MIXED_PRECISION"}, {"quantized_layers", {{"vision.proj", {{"quant_algo", "FP8"}}}}}},
       "'vision.proj'"},
      {"mixed, entry without algorithm",
       {{"quant_algo", "MIXED_PRECISION"}, {"quantized_layers", {{"lm_head", {{"group_size", 16}}}}}},
       "quantized_layers['lm_head']"},
      {"mixed, unknown entry algorithm",
       {{"quant_algo", "MIXED_PRECISION"}, {"quantized_layers", {{"lm_head", {{"quant_algo", "W8A8"}}}}}},
       "'W8A8' is not priced"},
  };
  for (const Case& c : cases) {
    nlohmann::json q = base;
    q.update(c.patch);
    const std::string e = err(q, llama70b());
    EXPECT_NE(e.find(c.says), std::string::npos) << c.what << ": " << e;
    EXPECT_NE(e.find("m.json"), std::string::npos) << c.what << " names the file: " << e;
  }
}

// nvidia/Llama-3.3-70B-Instruct-FP4 (ModelOpt NVFP4, only the transformer blocks' linear layers
// quantised): NVIDIA's model cards for its FP4 checkpoints state "reducing the disk size and GPU
// memory requirements by approximately 3.5x" (nvidia/Llama-3.1-405B-Instruct-FP4's card, the same
// recipe), and LMSYS's FP4 post says "FP4-quantized Llama 3.3 70B models achieve a 3.5x
// reduction in model size"; a ModelOpt NVFP4 export of Llama-3.3-70B-Instruct with lm_head ignored
// is published as "Original size ~141 GB (BF16), Quantized size ~40 GB"
// (huggingface.co/Kaleto/Llama-3.3-70B-Instruct-NVFP4).
TEST(ModelOpt, PublishedLlama70bNvfp4Size) {
  const ModelShape m = with_quant(llama70b(), {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"},
                                               {"group_size", 16}, {"ignore", {"lm_head"}}});
  const double fp4 = total_weight_bytes(m, weight_bytes_of(m, "nvfp4"));
  const double bf16 = total_weight_bytes(m, weight_bytes_of(m, "bf16"));
  EXPECT_NEAR(bf16 / 141e9, 1.0, 0.02) << "BF16 " << bf16;
  EXPECT_NEAR(fp4 / 40e9, 1.0, 0.08) << "NVFP4 " << fp4 << " against the published ~40 GB";
  EXPECT_NEAR(bf16 / fp4, 3.5, 0.25) << "the published ~3.5x reduction";
  EXPECT_GT(fp4, 0.5 / 2.0 * bf16 * 1.1) << "the FP8 block scales (0.5 byte per 16 weights) are counted";
}

TEST(ModelOpt, Fp4PeakOnBlackwellOnly) {
  SpecLibrary lib;
  EXPECT_EQ(gemm_compute_dtype(lib.hardware("b200"), "nvfp4"), "fp4") << "B200 has FP4 tensor cores";
  EXPECT_EQ(gemm_compute_dtype(lib.hardware("h200"), "nvfp4"), "bf16") << "Hopper: weight-only FP4, 16-bit math";
  EXPECT_EQ(gemm_compute_dtype(lib.hardware("h200"), "fp8"), "fp8");
}

// The checkpoint's FP8 KV cache halves the KV bytes the memory check counts; --dtype bf16 keeps 2.
TEST(ModelOpt, KvCacheDtypeFromTheCheckpoint) {
  SpecLibrary lib;
  auto kv = [&](const nlohmann::json& q, const std::string& dtype) {
    Scenario s;
    s.target = with_quant(llama70b(), q);
    s.hardware = lib.hardware("b200");
    s.engine = lib.engine("vllm");
    s.workload.dtype = dtype;
    s.workload.prompt_len = 1000;
    s.workload.output_len = 24;
    return predict(s).kv_bytes_per_device;
  };
  const nlohmann::json fp8kv = {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"}, {"kv_cache_quant_algo", "FP8"}};
  const nlohmann::json plain = {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"}};
  EXPECT_DOUBLE_EQ(kv(fp8kv, "") * 2, kv(plain, "")) << "FP8 KV is half of BF16";
  EXPECT_DOUBLE_EQ(kv(fp8kv, "bf16"), kv(plain, "")) << "--dtype bf16 drops the checkpoint's KV dtype";
  EXPECT_DOUBLE_EQ(kv(plain, ""), 1024.0 * 80 * 2 * 8 * 128 * 2) << "BF16 KV of 1024 tokens";
}

}  // namespace
}  // namespace specdec::sim
