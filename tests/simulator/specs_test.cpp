// Spec files: every bundled file parses, shapes match published parameter counts, and malformed
// specs fail with messages that name the file, the field and what was expected.
#include <gtest/gtest.h>

#include <fstream>

#include "simulator/spec_json.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

TEST(Specs, EveryBundledSpecParsesAndHasSources) {
  SpecLibrary lib;
  for (const auto& n : lib.names("hardware")) {
    SCOPED_TRACE("hardware " + n);
    const HardwareSpec h = lib.hardware(n);
    EXPECT_EQ(h.name, n);
    const auto j = read_json_file(lib.find("hardware", n));
    ASSERT_TRUE(j.contains("sources"));
    for (const char* field : {"memory_bytes", "memory_bandwidth_bytes_per_s", "peak_flops_per_s"})
      EXPECT_TRUE(j["sources"].contains(field)) << field;
  }
  EXPECT_GE(lib.names("hardware").size(), 7u);
  for (const auto& n : lib.names("models")) {
    SCOPED_TRACE("model " + n);
    const ModelShape m = lib.model(n);
    EXPECT_EQ(m.name, n);
    EXPECT_FALSE(read_json_file(lib.find("models", n)).value("source", "").empty());
  }
  for (const auto& n : lib.names("drafters")) {
    SCOPED_TRACE("drafter " + n);
    const DrafterSpec d = lib.drafter_spec(n);
    ASSERT_FALSE(d.target.empty());
    const Drafter r = lib.drafter(n, lib.model(d.target));  // resolves against its intended target
    EXPECT_EQ(r.method, d.method);
  }
}

// Published sizes (total parameters, active per token), tolerance 2% (dense) / 5% (MoE).
TEST(Specs, ParameterCountsMatchPublishedSizes) {
  SpecLibrary lib;
  struct Case {
    const char* name;
    double total, active, tol;
  };
  for (const Case& c : {Case{"llama-2-7b", 6.74e9, 6.74e9, 0.02}, Case{"llama-2-13b", 13.0e9, 13.0e9, 0.02},
                        Case{"llama-2-70b", 68.98e9, 68.98e9, 0.02}, Case{"llama-3.1-8b", 8.03e9, 8.03e9 - 0.525e9, 0.02},
                        Case{"llama-3.1-70b", 70.6e9, 70.6e9 - 1.05e9, 0.02}, Case{"vicuna-33b", 32.5e9, 32.5e9, 0.02},
                        Case{"qwen3-coder-30b-a3b", 30.5e9, 3.3e9, 0.05}, Case{"gpt-oss-20b", 20.9e9, 3.6e9, 0.05},
                        Case{"gpt-oss-120b", 116.8e9, 5.1e9, 0.05}}) {
    const ModelShape m = lib.model(c.name);
    EXPECT_NEAR(m.total_params() / c.total, 1.0, c.tol) << c.name << " total " << m.total_params();
    EXPECT_NEAR(m.active_params() / c.active, 1.0, 0.08) << c.name << " active " << m.active_params();
  }
  const ModelShape oss = lib.model("gpt-oss-120b");
  EXPECT_TRUE(oss.is_moe());
  EXPECT_EQ(oss.num_experts, 128);
  EXPECT_EQ(oss.experts_per_token, 4);
  EXPECT_DOUBLE_EQ(oss.expert_weight_bytes, 4.25 / 8);
  EXPECT_DOUBLE_EQ(oss.sliding_layer_fraction, 0.5);
}

TEST(Specs, AnyHfConfigJsonFileIsAModel) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "my-model");
  const auto path = dir.path() / "my-model" / "config.json";
  std::ofstream(path) << R"({"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3","hidden_size":1024,
    "intermediate_size":3072,"num_hidden_layers":28,"num_attention_heads":16,"num_key_value_heads":8,"head_dim":128,
    "vocab_size":151936,"tie_word_embeddings":true,"torch_dtype":"bfloat16","some_unknown_field":1})";
  SpecLibrary lib;
  const ModelShape m = lib.model(path.string());
  EXPECT_EQ(m.name, "my-model");
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.q_dim(), 2048);  // head_dim differs from H / nh
  EXPECT_TRUE(m.tie_word_embeddings);
}

TEST(Specs, ModelErrorsNameFieldAndFile) {
  const auto base = nlohmann::json::parse(R"({"hidden_size":64,"intermediate_size":128,"num_hidden_layers":2,
      "num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100})");
  EXPECT_NO_THROW(parse_model_shape(base, "m.json"));
  auto j = base;
  j.erase("hidden_size");
  EXPECT_NE(error_of([&] { parse_model_shape(j, "m.json"); }).find("m.json: missing required field 'hidden_size'"),
            std::string::npos);
  j = base;
  j["num_key_value_heads"] = 3;
  EXPECT_NE(error_of([&] { parse_model_shape(j, "m.json"); }).find("multiple of num_key_value_heads"), std::string::npos);
  j = base;
  j["vocab_size"] = "many";
  EXPECT_NE(error_of([&] { parse_model_shape(j, "m.json"); }).find("'vocab_size' must be a number"), std::string::npos);
  j = base;
  j["num_local_experts"] = 8;
  EXPECT_NE(error_of([&] { parse_model_shape(j, "m.json"); }).find("lacks 'num_experts_per_tok'"), std::string::npos);
  j = base;
  j["torch_dtype"] = "float13";
  EXPECT_NE(error_of([&] { parse_model_shape(j, "m.json"); }).find("unknown dtype 'float13'"), std::string::npos);
}

TEST(Specs, HardwareErrorsNameFieldAndFile) {
  const auto base = nlohmann::json::parse(R"({"name":"x","memory_bytes":1e9,"memory_bandwidth_bytes_per_s":1e11,
      "peak_flops_per_s":{"bf16":1e13}})");
  EXPECT_NO_THROW(parse_hardware_spec(base, "hw.json"));
  auto j = base;
  j["memory_bandwith_bytes_per_s"] = 1;  // typo
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("hw.json: unknown field 'memory_bandwith_bytes_per_s'"),
            std::string::npos);
  j = base;
  j["efficiency"] = {{"memory", 1.5}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("efficiency.memory must be in (0, 1]"), std::string::npos);
  j = base;
  j["memory_bandwidth_bytes_per_s"] = -1;
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("'memory_bandwidth_bytes_per_s' must be > 0"),
            std::string::npos);
  j = base;
  j["peak_flops_per_s"] = 5;
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("'peak_flops_per_s' must be an object"), std::string::npos);
  j = base;
  j["overhead"] = {{"draft_step_s", {{"eagle3", "slow"}}}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("field 'draft_step_s.eagle3' must be a number"), std::string::npos);
  const HardwareSpec h = parse_hardware_spec(base, "hw.json");
  EXPECT_NE(error_of([&] { h.peak_flops("fp8"); }).find("no peak_flops_per_s entry for dtype 'fp8'"), std::string::npos);
  // Round trip through JSON.
  const HardwareSpec back = parse_hardware_spec(hardware_spec_to_json(h), "round trip");
  EXPECT_EQ(back.memory_bandwidth_bytes_per_s, h.memory_bandwidth_bytes_per_s);
  EXPECT_EQ(back.peak_flops_per_s, h.peak_flops_per_s);
}

TEST(Specs, LibraryAndDrafterErrors) {
  SpecLibrary lib;
  const std::string e = error_of([&] { lib.hardware("h300"); });
  EXPECT_NE(e.find("unknown hardware spec 'h300'"), std::string::npos) << e;
  EXPECT_NE(e.find("h100-sxm"), std::string::npos) << "the message lists what exists: " << e;
  test::TempDir dir;
  std::ofstream(dir.path() / "bad.json") << "{not json";
  EXPECT_NE(error_of([&] { lib.hardware((dir.path() / "bad.json").string()); }).find("is not valid JSON"), std::string::npos);

  // EAGLE-1 uses the target's LM head: hidden sizes must agree.
  const DrafterSpec e1 = lib.drafter_spec("eagle1-vicuna-7b");
  EXPECT_NE(error_of([&] { resolve_drafter(e1, lib.model("llama-2-70b")); }).find("hidden_size must equal the target's"),
            std::string::npos);
  // Draft-model speculation needs a shared vocabulary.
  const ModelShape dm = lib.model("vicuna-68m");
  const DrafterSpec d = lib.drafter_spec("draft-vicuna-68m");
  EXPECT_NE(error_of([&] { resolve_drafter(d, lib.model("llama-3.1-8b"), &dm); }).find("vocabulary"), std::string::npos);
  auto j = nlohmann::json::parse(R"({"name":"x","method":"eagle3","num_layers":2})");
  EXPECT_NE(error_of([&] { parse_drafter_spec(j, "d.json"); }).find("exactly 1 layer"), std::string::npos);
  j = nlohmann::json::parse(R"({"name":"x","method":"medusa"})");
  EXPECT_NE(error_of([&] { parse_drafter_spec(j, "d.json"); }).find("unknown method 'medusa'"), std::string::npos);
  j = nlohmann::json::parse(R"({"name":"x","method":"draft_model"})");
  EXPECT_NE(error_of([&] { parse_drafter_spec(j, "d.json"); }).find("needs field 'model'"), std::string::npos);
}

}  // namespace
}  // namespace specdec::sim
