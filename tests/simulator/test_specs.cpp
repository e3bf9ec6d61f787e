// Spec files: every bundled file parses, shapes match published parameter counts, and malformed
// specs fail with messages that name the file, the field and what was expected.
#include <gtest/gtest.h>

#include <algorithm>
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
    if (draft_free(d.method)) {  // no model, so no intended target: its categories name their setups
      const Drafter r = lib.drafter(n, lib.model("llama-3.1-8b"));
      EXPECT_TRUE(r.draft_free);
      EXPECT_EQ(r.method, d.method);
      continue;
    }
    ASSERT_FALSE(d.target.empty());
    if (!d.not_priced.empty()) {  // refused with its reason, whatever the target (MLA, linear attention)
      EXPECT_NE(error_of([&] { lib.drafter(n, lib.model("llama-3.1-8b")); }).find("cannot be priced: " + d.not_priced),
                std::string::npos);
      continue;
    }
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
  EXPECT_DOUBLE_EQ(oss.precision_of(WeightClass::routed_experts).bytes, 4.25 / 8);
  EXPECT_DOUBLE_EQ(oss.sliding_layer_fraction, 0.5);
}

// The heads and GPUs of the published speedup tables resolve with their own shapes: EAGLE-3's
// draft vocabularies, GPT-OSS heads' dense layer (the target is MoE), the cards' dense rates.
TEST(Specs, PublishedHeadsAndGpus) {
  SpecLibrary lib;
  for (const std::string size : {"20b", "120b"}) {
    SCOPED_TRACE("gpt-oss-" + size);
    const Drafter d = lib.drafter("eagle3-gpt-oss-" + size, lib.model("gpt-oss-" + size));
    EXPECT_EQ(d.method, Method::eagle3);
    EXPECT_EQ(d.lm_head_vocab, 32000) << "draft vocabulary, not the target's 201088";
    EXPECT_EQ(d.fc_in, 3 * 2880);
    EXPECT_EQ(d.qkv_in, 2 * 2880);
    EXPECT_FALSE(d.shape.is_moe()) << "a dense head for a MoE target";
    EXPECT_EQ(d.shape.intermediate_size, 17280);
    EXPECT_EQ(d.shape.num_heads, 64);
    EXPECT_EQ(d.shape.num_kv_heads, 8);
    EXPECT_EQ(d.shape.head_dim, 64);
  }
  const Drafter v = lib.drafter("eagle3-vicuna-13b", lib.model("vicuna-13b"));
  EXPECT_EQ(v.lm_head_vocab, 32000);
  EXPECT_EQ(v.shape.hidden_size, 5120);
  const Drafter l = lib.drafter("eagle1-llama2-chat-13b", lib.model("llama-2-13b"));
  EXPECT_EQ(l.method, Method::eagle1);
  EXPECT_EQ(l.fc_in, 2 * 5120);
  EXPECT_EQ(l.lm_head_vocab, 32000);
  EXPECT_NE(error_of([&] { lib.drafter("eagle1-llama2-chat-13b", lib.model("llama-2-7b")); }).find("hidden_size must equal"),
            std::string::npos);
  struct Gpu {
    const char* name;
    double bandwidth, bf16, memory;
  };
  for (const Gpu& g : {Gpu{"rtx-3090", 936e9, 71e12, 24e9}, Gpu{"rtx-a6000", 768e9, 154.8e12, 48e9},
                       Gpu{"l40s", 864e9, 362.05e12, 48e9}}) {
    const HardwareSpec h = lib.hardware(g.name);
    EXPECT_EQ(h.memory_bandwidth_bytes_per_s, g.bandwidth) << g.name;
    EXPECT_EQ(h.peak_flops("bf16"), g.bf16) << g.name;
    EXPECT_EQ(h.memory_bytes, g.memory) << g.name;
    EXPECT_EQ(h.gemm_tile_rows, 64) << g.name;
  }
}

// Trainium2: the spec's devices are logical NeuronCores (LNC 2); over a trn2.48xlarge they must add
// up to AWS's per-chip figures times 16 chips.
TEST(Specs, Trainium2DevicesAddUpToTheInstance) {
  const HardwareSpec h = SpecLibrary().hardware("trn2-48xlarge");
  const double chips = 16, per_chip = h.devices_per_instance / chips;
  EXPECT_EQ(h.devices_per_instance, 64);
  EXPECT_NEAR(h.peak_flops("bf16") * per_chip, 667e12, 1e9);
  EXPECT_NEAR(h.peak_flops("fp8") * per_chip, 1299e12, 1e9);
  EXPECT_NEAR(h.peak_flops("fp32") * per_chip, 181e12, 1e9);
  EXPECT_NEAR(h.memory_bytes * per_chip, 96.0 * (1ull << 30), 1.0);
  EXPECT_NEAR(h.memory_bandwidth_bytes_per_s * per_chip, 2.9e12, 1e6);
  EXPECT_NEAR(h.interconnect_bandwidth_bytes_per_s * per_chip, 1.28e12, 1e6);
  EXPECT_EQ(h.price_per_instance_hour, 0.0) << "no public price: capacity plans count devices";
  // Llama-3.1-70B in bf16 (141 GB) needs more than four 24 GiB devices: TP 8 fits, TP 4 does not.
  // (The Neuron engine runs draft models: a Llama-3.2-1B draft.)
  Scenario s = test::scenario("llama-3.1-70b", "trn2-48xlarge", "draft-llama-3.2-1b", 3, 0.75);
  s.workload.tp = 4;
  EXPECT_FALSE(predict(s).fits_memory);
  s.workload.tp = 8;
  EXPECT_TRUE(predict(s).fits_memory);
}

// FR-Spec: an EAGLE-1 head drafting over a frequency-ranked quarter of the vocabulary evaluates a
// quarter of the LM head's rows per draft, holds that slice as its own copy, and so drafts faster
// than the same head over the whole vocabulary; the verification is the same.
TEST(Specs, FrequencyRankedVocabularyPricesAQuarterOfTheDraftHead) {
  SpecLibrary lib;
  const ModelShape target = lib.model("llama-3-8b");
  const Drafter full = lib.drafter("eagle1-llama3-8b", target);
  const Drafter pruned = lib.drafter("eagle1-llama3-8b-frspec-32k", target);
  EXPECT_EQ(full.lm_head_vocab, 128256);
  EXPECT_EQ(pruned.lm_head_vocab, 32768);
  auto predicted = [&](const Drafter& d) {
    Scenario s = test::scenario("llama-3-8b", "h100-sxm", "", 0, 0);
    s.drafter = d;
    s.plan.method = d.method;
    s.plan.k = 5;
    s.acceptance = iid_acceptance(0.7);
    return predict(s);
  };
  const Prediction a = predicted(full), b = predicted(pruned);
  EXPECT_LT(b.step.draft_s, a.step.draft_s);
  EXPECT_DOUBLE_EQ(b.step.verify_s, a.step.verify_s);
  EXPECT_NEAR(b.weight_bytes_per_device - a.weight_bytes_per_device, 32768.0 * 4096 * 2, 1.0)
      << "the sliced 32k x 4096 bf16 head is held beside the target's";
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
  j["overhead"] = {{"kernel_floor_s", "slow"}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("kernel_floor_s"), std::string::npos);
  j = base;
  j["roofline"] = {{"gemm_tile_rows", 0}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("hw.json (roofline): field 'gemm_tile_rows' must be in [1, 4096], got 0"),
            std::string::npos);
  j["roofline"] = {{"overlap_exponent", 0.5}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("'overlap_exponent' must be 0 (perfect overlap) or in [1, 64]"),
            std::string::npos);
  j["roofline"] = {{"tile_rows", 64}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("unknown field 'tile_rows'"), std::string::npos);
  // The gemm block: SM count and tile shapes are required together, each checked.
  j = base;
  j["gemm"] = {{"tiles", {{64, 128}}}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("hw.json (gemm): field 'sm_count' is missing"),
            std::string::npos);
  j["gemm"] = {{"sm_count", 0}, {"tiles", {{64, 128}}}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("'sm_count' must be in [1, 4096], got 0"),
            std::string::npos);
  j["gemm"] = {{"sm_count", 132}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("'tiles' must be a list of 1 to 32"), std::string::npos);
  j["gemm"] = {{"sm_count", 132}, {"tiles", nlohmann::json::array()}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("'tiles' must be a list of 1 to 32"), std::string::npos);
  j["gemm"] = {{"sm_count", 132}, {"tiles", {{64, 128, 2}}}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("must be [rows, cols] (two integers)"),
            std::string::npos);
  j["gemm"] = {{"sm_count", 132}, {"tiles", {{64, 0}}}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("rows and cols in [1, 1024]"), std::string::npos);
  j["gemm"] = {{"sm_count", 132}, {"tiles", {{64, 128}}}, {"split_k_max", 0}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("'split_k_max' must be in [1, 256]"),
            std::string::npos);
  j["gemm"] = {{"sm_count", 132}, {"tiles", {{64, 128}}}, {"l2_bandwidth_bytes_per_s", -1}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("l2_bandwidth_bytes_per_s"), std::string::npos);
  j["gemm"] = {{"sm_count", 132}, {"tiles", {{64, 128}}}, {"waves", 2}};
  EXPECT_NE(error_of([&] { parse_hardware_spec(j, "hw.json"); }).find("unknown field 'waves'"), std::string::npos);
  j["gemm"] = {{"sm_count", 132}, {"tiles", {{128, 256}, {64, 128}}}, {"l2_bandwidth_bytes_per_s", 1e13}};
  const HardwareSpec g = parse_hardware_spec(j, "hw.json");
  EXPECT_EQ(g.gemm_tile_rows, 64) << "the smallest tile's rows when roofline.gemm_tile_rows is absent";
  EXPECT_EQ(g.split_k_max, 16);
  const HardwareSpec gback = parse_hardware_spec(hardware_spec_to_json(g), "round trip");
  ASSERT_EQ(gback.gemm_tiles.size(), 2u);
  EXPECT_EQ(gback.gemm_tiles[0].rows, 128);
  EXPECT_EQ(gback.gemm_tiles[1].cols, 128);
  EXPECT_EQ(gback.sm_count, 132);
  EXPECT_EQ(gback.l2_bandwidth_bytes_per_s, 1e13);
  EXPECT_TRUE(parse_hardware_spec(base, "hw.json").gemm_tiles.empty()) << "no gemm block: rows rounded to gemm_tile_rows only";
  const HardwareSpec h = parse_hardware_spec(base, "hw.json");
  EXPECT_EQ(h.gemm_tile_rows, 1) << "no roofline block: no tile rounding";
  EXPECT_EQ(h.overlap_exponent, 0.0) << "no roofline block: perfect overlap";
  EXPECT_NE(error_of([&] { h.peak_flops("fp8"); }).find("no peak_flops_per_s entry for dtype 'fp8'"), std::string::npos);
  // Round trip through JSON.
  const HardwareSpec back = parse_hardware_spec(hardware_spec_to_json(h), "round trip");
  EXPECT_EQ(back.memory_bandwidth_bytes_per_s, h.memory_bandwidth_bytes_per_s);
  EXPECT_EQ(back.peak_flops_per_s, h.peak_flops_per_s);
  j = base;
  j["roofline"] = {{"gemm_tile_rows", 64}, {"overlap_exponent", 2.5}};
  const HardwareSpec r = parse_hardware_spec(hardware_spec_to_json(parse_hardware_spec(j, "hw.json")), "round trip");
  EXPECT_EQ(r.gemm_tile_rows, 64);
  EXPECT_EQ(r.overlap_exponent, 2.5);
}

TEST(Specs, EveryBundledEngineParsesAndHasSources) {
  SpecLibrary lib;
  const auto names = lib.names("engines");
  for (const char* want : {"ideal", "vllm", "sglang", "tensorrt-llm", "hf-eager", "transformers-neuronx", "specdec-cpu"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
  for (const auto& n : names) {
    SCOPED_TRACE("engine " + n);
    const EngineSpec e = lib.engine(n);
    EXPECT_EQ(e.name, n);
    EXPECT_TRUE(read_json_file(lib.find("engines", n)).contains("sources"));
    // Round trip through JSON.
    const EngineSpec back = parse_engine_spec(engine_spec_to_json(e), "round trip");
    EXPECT_EQ(back.step_overhead_s, e.step_overhead_s);
    EXPECT_EQ(back.cuda_graphs, e.cuda_graphs);
    EXPECT_EQ(back.launch_floor_s(), e.launch_floor_s());
    EXPECT_EQ(back.methods, e.methods);
    EXPECT_EQ(back.trees, e.trees);
    EXPECT_EQ(back.flatten_trees, e.flatten_trees);
    EXPECT_EQ(back.sampling_s_per_row, e.sampling_s_per_row);
    EXPECT_EQ(back.interleaves_prefill, e.interleaves_prefill);
    // Whether prefill runs inside the decode steps changes every capacity plan: each bundled engine
    // says so, with its source.
    const nlohmann::json file = read_json_file(lib.find("engines", n));
    EXPECT_TRUE(file.contains("interleaves_prefill"));
    EXPECT_TRUE(file["sources"].contains("interleaves_prefill"));
  }
  // Left out it is true (chunked prefill, the common case); anything but a boolean is an error.
  EXPECT_TRUE(parse_engine_spec({{"name", "plain"}}, "plain.json").interleaves_prefill);
  EXPECT_FALSE(parse_engine_spec({{"name", "apart"}, {"interleaves_prefill", false}}, "apart.json").interleaves_prefill);
  EXPECT_FALSE(parse_engine_spec(engine_spec_to_json(parse_engine_spec({{"name", "apart"}, {"interleaves_prefill", false}}, "a.json")),
                                 "round trip")
                   .interleaves_prefill);
  EXPECT_NE(test::error_of([] { parse_engine_spec({{"name", "x"}, {"interleaves_prefill", "yes"}}, "x.json"); })
                .find("x.json: field 'interleaves_prefill' must be true or false"),
            std::string::npos);
  nlohmann::json flat = {{"name", "flat"}, {"tree_verification", "flattened"}, {"overhead", {{"sampling_s_per_row", 2e-6}}}};
  const EngineSpec f = parse_engine_spec(flat, "flat.json");
  EXPECT_TRUE(f.flatten_trees);
  EXPECT_EQ(f.sampling_s_per_row, 2e-6);
  const EngineSpec f2 = parse_engine_spec(engine_spec_to_json(f), "round trip");
  EXPECT_TRUE(f2.flatten_trees);
  EXPECT_EQ(f2.sampling_s_per_row, 2e-6);
  EXPECT_FALSE(lib.engine("hf-eager").flatten_trees) << "the EAGLE code verifies trees with a tree mask";
  for (const char* kind : {"gpu", "neuron", "cpu"}) EXPECT_NO_THROW(lib.engine(default_engine_for(kind))) << kind;
  const EngineSpec eager = lib.engine("hf-eager");
  EXPECT_FALSE(eager.cuda_graphs);
  EXPECT_NEAR(eager.launch_floor_s(), 4.3 * 10e-6, 1e-12);
  EXPECT_FALSE(lib.engine("vllm").trees);
  EXPECT_TRUE(lib.engine("vllm").runs(Method::peagle));
  EXPECT_FALSE(lib.engine("sglang").runs(Method::peagle));
  EXPECT_TRUE(lib.engine("ideal").runs(Method::peagle)) << "no methods list: every method";
}

TEST(Specs, EngineErrorsNameFieldAndFile) {
  const auto base = nlohmann::json::parse(R"({"name":"e","overhead":{"step_s":1e-3}})");
  EXPECT_NO_THROW(parse_engine_spec(base, "e.json"));
  auto says = [](const nlohmann::json& j, const std::string& what) {
    const std::string e = error_of([&] { parse_engine_spec(j, "e.json"); });
    EXPECT_NE(e.find(what), std::string::npos) << "expected '" << what << "' in: " << e;
  };
  auto j = base;
  j["overhead"]["stepp_s"] = 1;
  says(j, "e.json (overhead): unknown field 'stepp_s'");
  j = base;
  j["overhead"]["step_s"] = -1;
  says(j, "'step_s' must be >= 0");
  j = base;
  j["kernels"] = {{"cuda_graphs", false}};
  says(j, "an engine without CUDA graphs needs 'launch_s'");
  j["kernels"] = {{"cuda_graphs", "no"}};
  says(j, "field 'cuda_graphs' must be true or false");
  j["kernels"] = {{"cuda_graphs", false}, {"launch_s", 1e-5}, {"per_operator", 0.5}};
  says(j, "field 'per_operator' must be in [1, 1000]");
  j = base;
  j["tree_verification"] = "paths";
  says(j, "field 'tree_verification' must be \"tree_attention\"");
  j["tree_verification"] = "flattened";
  j["trees"] = false;
  says(j, "'trees' is false");
  j = base;
  j["overhead"]["sampling_s_per_row"] = -1e-6;
  says(j, "'sampling_s_per_row' must be >= 0");
  j = base;
  j["methods"] = {"eagle3", "hydra"};
  says(j, "unknown method 'hydra'");
  j["methods"] = nlohmann::json::array();
  says(j, "field 'methods' must be a non-empty list");
  j = base;
  j["trees"] = 1;
  says(j, "field 'trees' must be true or false");
  says(nlohmann::json::array(), "an engine spec must be a JSON object");
  // Host time in a hardware spec is refused with where it now belongs.
  const auto hw = nlohmann::json::parse(R"({"name":"x","memory_bytes":1e9,"memory_bandwidth_bytes_per_s":1e11,
      "peak_flops_per_s":{"bf16":1e13},"overhead":{"step_s":0.001}})");
  EXPECT_NE(error_of([&] { parse_hardware_spec(hw, "hw.json"); })
                .find("hw.json (overhead): field 'step_s' is host time of the engine, not of the hardware"),
            std::string::npos);
}

TEST(Specs, LibraryAndDrafterErrors) {
  SpecLibrary lib;
  const std::string e = error_of([&] { lib.hardware("h300"); });
  EXPECT_NE(e.find("unknown hardware spec 'h300'"), std::string::npos) << e;
  EXPECT_NE(e.find("h100-sxm"), std::string::npos) << "the message lists what exists: " << e;
  test::TempDir dir;
  std::ofstream(dir.path() / "bad.json") << "{not json";
  EXPECT_NE(error_of([&] { lib.hardware((dir.path() / "bad.json").string()); }).find("not valid JSON"), std::string::npos);

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
  j = nlohmann::json::parse(R"({"name":"x","method":"hydra"})");
  EXPECT_NE(error_of([&] { parse_drafter_spec(j, "d.json"); }).find("unknown method 'hydra'"), std::string::npos);
  j = nlohmann::json::parse(R"({"name":"x","method":"draft_model"})");
  EXPECT_NE(error_of([&] { parse_drafter_spec(j, "d.json"); }).find("needs field 'model'"), std::string::npos);
}

}  // namespace
}  // namespace specdec::sim
