// MTP checkpoints: each layout's names and config keys, checkpoints of several modules, a module
// stored inside the target's own checkpoint, the method's variant parameter and the drafter it
// loads, and every error a user's MTP checkpoint can cause (missing, misshapen or unexpected
// tensors; mixture-of-experts and MLA layers; configs of another model). The module forward and
// single-module round trips run with the other heads (test_eagle_head's cases).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/eagle_tensors.hpp"
#include "reference/drafters/mtp_checkpoint.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/io/tensor_store.hpp"
#include "reference/methods/method_spec.hpp"
#include "reference/methods/registry.hpp"
#include "runtime/method_runner.hpp"
#include "tests/drafters/checkpoint_edit.hpp"
#include "tests/drafters/eagle_head_cases.hpp"
#include "tests/reference/error_capture.hpp"
#include "tests/reference/model_fixtures.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::error_of;
using testing::find_case;
using testing::make_head;
using testing::ScratchDir;
using testing::target;

// Modules 0..n−1 of one checkpoint of `layout` for target() (seeds 200 + j).
std::vector<EagleHead> random_modules(const std::string& layout, int n) {
  std::vector<EagleHead> out;
  for (int j = 0; j < n; ++j) {
    EagleHeadConfig c = find_case("mtp_deepseek").config;
    c.layout = layout;
    c.hidden_first = layout == "mimo";
    c.module = j;
    c.num_modules = n;
    out.push_back(random_eagle_head(c, target(), 200 + static_cast<uint64_t>(j), 0.08f));
  }
  return out;
}

void expect_same_forward(const EagleHead& a, const EagleHead& b, const std::string& label) {
  const EagleHead::Input in = testing::random_input(a, 4, 9);
  auto ca = a.new_cache(8), cb = b.new_cache(8);
  const EagleHead::Output x = a.forward(*ca, in), y = b.forward(*cb, in);
  testing::expect_bitwise(x.logits, y.logits, label + " logits");
  testing::expect_bitwise(x.hidden, y.hidden, label + " hidden");
}

// --- layouts ------------------------------------------------------------------------------------

TEST(MtpCheckpoint, EachLayoutWritesItsOwnNamesAndConfig) {
  const int H = 48, L = 3;
  struct Expect {
    std::string layout;
    std::vector<std::string> names;
    std::string config_key;
  };
  const std::vector<Expect> expects = {
      {"deepseek", {"model.layers.3.enorm.weight", "model.layers.3.hnorm.weight", "model.layers.3.eh_proj.weight",
                    "model.layers.3.shared_head.norm.weight", "model.layers.3.self_attn.q_proj.weight",
                    "model.layers.3.input_layernorm.weight", "model.layers.4.eh_proj.weight"},
       "num_nextn_predict_layers"},
      {"mimo", {"model.mtp_layers.0.token_layernorm.weight", "model.mtp_layers.0.hidden_layernorm.weight",
                "model.mtp_layers.0.input_proj.weight", "model.mtp_layers.0.final_layernorm.weight",
                "model.mtp_layers.1.mlp.down_proj.weight"},
       "num_nextn_predict_layers"},
      {"speculators", {"mtp_layers.0.token_layernorm.weight", "mtp_layers.0.input_proj.weight", "mtp_layers.1.final_layernorm.weight"},
       "speculators_model_type"},
  };
  for (const Expect& e : expects) {
    ScratchDir scratch("mtp-names");
    save_mtp_modules(scratch / "mtp", random_modules(e.layout, 2), Dtype::F32);
    const TensorStore store(scratch / "mtp");
    for (const std::string& n : e.names) EXPECT_TRUE(store.has(n)) << e.layout << ": " << n;
    EXPECT_EQ(store.info(e.layout == "deepseek" ? "model.layers.3.eh_proj.weight"
                         : e.layout == "mimo"   ? "model.mtp_layers.0.input_proj.weight"
                                                : "mtp_layers.0.input_proj.weight")
                  .shape,
              (std::vector<int64_t>{H, 2 * H}))
        << e.layout;
    const json j = json::parse(testing::read_text(scratch / "mtp" / "config.json"));
    EXPECT_TRUE(j.contains(e.config_key)) << e.layout;
    if (e.layout == "speculators") {
      EXPECT_EQ(j.at("speculators_model_type"), "mtp");
      EXPECT_EQ(j.at("num_nextn_predict_layers"), 2);
      EXPECT_EQ(j.at("transformer_layer_config").at("num_hidden_layers"), L);
    } else {
      EXPECT_EQ(j.at("num_nextn_predict_layers"), 2) << e.layout;
      EXPECT_EQ(j.at("num_hidden_layers"), L) << e.layout;  // the target's config, not the module's
    }
  }
  // Qwen3-Next: one module of several layers.
  ScratchDir scratch("mtp-qwen3-next");
  save_eagle_head(scratch / "mtp", make_head(find_case("mtp_qwen3_next_two_layers")), Dtype::F32);
  const TensorStore store(scratch / "mtp");
  for (const char* n : {"mtp.pre_fc_norm_embedding.weight", "mtp.pre_fc_norm_hidden.weight", "mtp.fc.weight", "mtp.norm.weight",
                        "mtp.layers.0.self_attn.o_proj.weight", "mtp.layers.1.post_attention_layernorm.weight"}) {
    EXPECT_TRUE(store.has(n)) << n;
  }
  EXPECT_EQ(json::parse(testing::read_text(scratch / "mtp" / "config.json")).at("mtp_num_hidden_layers"), 2);
}

TEST(MtpCheckpoint, SeveralModulesRoundTripBitwiseInEveryLayout) {
  for (const std::string layout : {"deepseek", "mimo", "speculators"}) {
    ScratchDir scratch("mtp-modules");
    const std::vector<EagleHead> saved = random_modules(layout, 3);
    save_mtp_modules(scratch / "mtp", saved, Dtype::F32);
    const std::vector<EagleHead> loaded = load_mtp_modules(scratch / "mtp", target());
    ASSERT_EQ(loaded.size(), 3u) << layout;
    for (std::size_t j = 0; j < loaded.size(); ++j) {
      const std::string label = layout + " module " + std::to_string(j);
      EXPECT_TRUE(loaded[j].config() == saved[j].config()) << label;
      expect_same_forward(saved[j], loaded[j], label);
    }
    // load_eagle_head reads module 0 of the same checkpoint.
    expect_same_forward(saved[0], load_eagle_head(scratch / "mtp", target()), layout + " via load_eagle_head");
  }
}

TEST(MtpCheckpoint, BF16ModulesLoadAsStored) {
  ScratchDir scratch("mtp-bf16");
  save_mtp_modules(scratch / "mtp", random_modules("deepseek", 1), Dtype::BF16);
  const TensorStore store(scratch / "mtp");
  EXPECT_EQ(store.info("model.layers.3.eh_proj.weight").dtype, Dtype::BF16);
  EXPECT_EQ(load_mtp_modules(scratch / "mtp", target()).front().config().layer.torch_dtype, "bfloat16");
}

// DeepSeek-V3 and GLM-4.5 keep the module in the target's own checkpoint: --drafter is --model.
TEST(MtpCheckpoint, AModuleInsideTheTargetsCheckpointLoadsFromTheSameFolder) {
  ScratchDir scratch("mtp-inside");
  save_llama_checkpoint(scratch / "model", target().config(), target().weights(), Dtype::F32);
  save_mtp_modules(scratch / "module", random_modules("deepseek", 1), Dtype::F32);
  std::vector<testing::StoredTensor> all = testing::read_tensors(scratch / "model" / "model.safetensors");
  for (testing::StoredTensor& t : testing::read_tensors(scratch / "module" / "model.safetensors")) all.push_back(std::move(t));
  testing::write_tensors(scratch / "model" / "model.safetensors", all);
  testing::edit_config(scratch / "model", [](json& j) { j["num_nextn_predict_layers"] = 1; });

  // The target loader ignores the module's tensors; the module loads from the same folder.
  const LlamaModel model = load_llama_checkpoint(scratch / "model");
  EXPECT_EQ(weights_fingerprint(model.weights), weights_fingerprint(target().weights()));
  const std::vector<EagleHead> modules = load_mtp_modules(scratch / "model", target());
  ASSERT_EQ(modules.size(), 1u);
  expect_same_forward(random_modules("deepseek", 1).front(), modules.front(), "inside the target");
}

// --- the method ---------------------------------------------------------------------------------

TEST(MtpMethod, VariantIsANamedChoice) {
  const MethodSpec s = parse_method_text("mtp,variant=vllm");
  EXPECT_EQ(s.params.at("variant"), "vllm");
  EXPECT_EQ(s.normalized().to_json().at("variant"), "vllm");
  EXPECT_EQ(s.normalized().label(), "mtp k=4 variant=vllm");
  MethodSpec d;
  d.name = "mtp";
  EXPECT_EQ(d.normalized().to_json().at("variant"), "checkpoint");  // the default
  EXPECT_EQ(d.label(), "mtp k=4");                                  // defaults are not spelled out
  EXPECT_EQ(method_from_json(json{{"method", "mtp"}, {"variant", "sglang"}}, "spec").params.at("variant"), "sglang");
  const std::string e = error_of([] { parse_method_text("mtp,variant=vlm"); });
  EXPECT_CONTAINS(e, "variant must be checkpoint, vllm or sglang, got 'vlm'");
  EXPECT_CONTAINS(e, "did you mean vllm?");
  EXPECT_CONTAINS(error_of([] { method_from_json(json{{"method", "mtp"}, {"variant", 2}}, "spec"); }),
                  "variant must be checkpoint, vllm or sglang, got 2");
  EXPECT_EQ(canonical_method_name("nextn"), "mtp");
}

// Decoding with a checkpoint of several modules: every module loaded and used, output exact.
TEST(MtpMethod, SeveralModulesDecodeAsSequential) {
  ScratchDir scratch("mtp-decode");
  save_llama_checkpoint(scratch / "target", target().config(), target().weights(), Dtype::F32);
  save_mtp_modules(scratch / "mtp", random_modules("mimo", 2), Dtype::F32);
  DecodeArgs a;
  a.model = (scratch / "target").string();
  a.drafter = (scratch / "mtp").string();
  a.method.name = "mtp";
  a.method.k = 5;
  a.max_new_tokens = 24;
  a.ignore_eos = true;
  a.prompt_ids = "1,5,9,17";
  for (const std::string variant : {"checkpoint", "vllm", "sglang"}) {
    a.method.params = {{"variant", variant}};
    const DecodeJob job = prepare_decode(a);
    const std::optional<LoadedDrafter> d = load_drafter(a, job.target);
    ASSERT_TRUE(d && d->head) << variant;
    EXPECT_EQ(d->extra_modules.size(), 1u) << variant;
    const GenerationResult r = run_method(a, job.target, job.prompt, job.sampling, job.options, nullptr, &*d);
    DecodeArgs seq = a;
    seq.method = MethodSpec{};
    seq.drafter.clear();
    const GenerationResult want = run_method(seq, job.target, job.prompt, job.sampling, job.options);
    EXPECT_EQ(r.tokens, want.tokens) << variant;
    EXPECT_GT(r.stats.drafter_forwards, r.stats.steps) << variant;  // chains of 5: several module forwards a step
  }
  // Trees draft with one module.
  a.method.tree = "[[0],[1],[0,0]]";
  const DecodeJob job = prepare_decode(a);
  EXPECT_CONTAINS(error_of([&] { run_method(a, job.target, job.prompt, job.sampling, job.options); }),
                  "trees are drafted with one MTP module");
}

TEST(MtpMethod, AnotherKindOfDrafterIsNamed) {
  ScratchDir scratch("mtp-kind");
  save_llama_checkpoint(scratch / "target", target().config(), target().weights(), Dtype::F32);
  save_mtp_modules(scratch / "mtp", random_modules("deepseek", 1), Dtype::F32);
  save_eagle_head(scratch / "eagle1", make_head(find_case("eagle1_safeailab")), Dtype::F32);
  DecodeArgs a;
  a.model = (scratch / "target").string();
  a.prompt_ids = "1,2";
  a.method.name = "eagle";
  a.drafter = (scratch / "mtp").string();
  const DecodeJob job = prepare_decode(a);
  EXPECT_CONTAINS(error_of([&] { load_drafter(a, job.target); }), "holds an mtp head; --method eagle needs an eagle1 head");
  a.method.name = "mtp";
  a.drafter = (scratch / "eagle1").string();
  EXPECT_CONTAINS(error_of([&] { load_drafter(a, job.target); }), "holds no MTP module");
}

// --- errors -------------------------------------------------------------------------------------

struct SavedModules {
  ScratchDir scratch{"mtp-errors"};
  fs::path dir;
  explicit SavedModules(const std::string& layout, int n = 1) : dir(scratch / "mtp") {
    save_mtp_modules(dir, random_modules(layout, n), Dtype::F32);
  }
  std::string load_error() const {
    return error_of([&] { load_mtp_modules(dir, target()); });
  }
};

TEST(MtpCheckpointErrors, MissingMisshapenAndUnexpectedTensorsAreNamed) {
  {
    SavedModules s("deepseek");
    testing::edit_tensors(s.dir, [](auto& t) { testing::remove_tensor(t, "model.layers.3.hnorm.weight"); });
    EXPECT_CONTAINS(s.load_error(), "missing tensor 'model.layers.3.hnorm.weight' (expected for MTP module 0 in the deepseek layout");
  }
  {
    SavedModules s("mimo");
    testing::edit_tensors(s.dir, [](auto& t) {
      testing::StoredTensor& p = testing::tensor(t, "model.mtp_layers.0.input_proj.weight");
      p.shape = {48, 48};
      p.floats.resize(48 * 48);
    });
    EXPECT_CONTAINS(s.load_error(), "model.mtp_layers.0.input_proj.weight");
    EXPECT_CONTAINS(s.load_error(), "[48, 96]");
  }
  {
    SavedModules s("speculators");
    testing::edit_tensors(s.dir, [](auto& t) {
      t.push_back({"mtp_layers.0.self_attn.q_proj.bias", Dtype::F32, {48}, std::vector<float>(48, 0.0f), {}});
    });
    EXPECT_CONTAINS(s.load_error(), "unexpected tensor 'mtp_layers.0.self_attn.q_proj.bias'");
  }
}

TEST(MtpCheckpointErrors, LayersSpecdecDoesNotComputeAreNamedWithTheFeature) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"model.layers.3.mlp.experts.0.gate_proj.weight", "a mixture-of-experts MLP"},
      {"model.layers.3.mlp.gate.weight", "a mixture-of-experts MLP"},
      {"model.layers.3.self_attn.kv_a_proj_with_mqa.weight", "multi-head latent attention (MLA)"},
      {"model.layers.3.linear_attn.in_proj_qkvz.weight", "linear attention"},
  };
  for (const auto& [name, feature] : cases) {
    SavedModules s("deepseek");
    testing::edit_tensors(s.dir, [&](auto& t) { t.push_back({name, Dtype::F32, {4}, std::vector<float>(4, 0.0f), {}}); });
    const std::string e = s.load_error();
    EXPECT_CONTAINS(e, "tensor '" + name + "' belongs to " + feature);
    EXPECT_CONTAINS(e, "which specdec does not implement");
  }
}

TEST(MtpCheckpointErrors, ConfigsOfAnotherModelAreNamed) {
  {
    SavedModules s("deepseek");
    testing::edit_config(s.dir, [](json& j) { j["hidden_size"] = 64; });
    EXPECT_CONTAINS(s.load_error(), "field 'hidden_size' is 64, the target's is 48");
  }
  {
    SavedModules s("deepseek");
    testing::edit_config(s.dir, [](json& j) { j["num_hidden_layers"] = 4; });
    EXPECT_CONTAINS(s.load_error(), "num_hidden_layers is 4, the target has 3");
  }
  {
    SavedModules s("deepseek", 2);
    testing::edit_config(s.dir, [](json& j) { j["num_nextn_predict_layers"] = 1; });
    EXPECT_CONTAINS(s.load_error(), "an MTP module at model.layers.4, expected model.layers.3 .. 3");
  }
  {
    SavedModules s("mimo");
    testing::edit_config(s.dir, [](json& j) { j["num_nextn_predict_layers"] = 100000; });
    EXPECT_CONTAINS(s.load_error(), "field 'num_nextn_predict_layers' must be an integer in [1, 64]");
  }
  {
    SavedModules s("speculators");
    testing::edit_config(s.dir, [](json& j) { j.erase("transformer_layer_config"); });
    EXPECT_CONTAINS(s.load_error(), "speculators MTP config has no 'transformer_layer_config' object");
  }
  {
    SavedModules s("speculators");
    testing::edit_config(s.dir, [](json& j) { j["transformer_layer_config"]["vocab_size"] = 1000; });
    EXPECT_CONTAINS(s.load_error(), "field 'vocab_size' is 1000, the target's is 97");
  }
  {
    ScratchDir scratch("mtp-none");
    save_eagle_head(scratch / "e1", make_head(find_case("eagle1_safeailab")), Dtype::F32);
    EXPECT_CONTAINS(error_of([&] { load_mtp_modules(scratch / "e1", target()); }), "holds no MTP module");
    EXPECT_CONTAINS(error_of([&] { load_mtp_modules(scratch / "absent", target()); }), "does not exist");
  }
  EXPECT_CONTAINS(error_of([] { save_mtp_modules("unused", {}, Dtype::F32); }), "no modules given");
  EXPECT_CONTAINS(error_of([] { save_mtp_modules("unused", {random_modules("mimo", 2)[1]}, Dtype::F32); }),
                  "entry 0 is not module 0 of 1");
}

}  // namespace
}  // namespace specdec
