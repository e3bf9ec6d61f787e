// Multi-head latent attention and DeepSeek-V3 in the simulator (docs/simulator.md "Multi-head
// latent attention"): one layer's operators against FLOPs and bytes written out by hand from the
// formulas at a small shape, the latent KV cache, DeepSeek-V3's published size and FP8 weights, the
// memory check, its MTP module, and what is still refused.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "simulator/mla.hpp"
#include "simulator/spec_json.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

// A small MLA shape, every width distinct so that a swapped term shows:
// H 64, nh 4 heads, q_lora_rank Q 32, kv_lora_rank Dl 16, qk_nope Dn 8, qk_rope Dr 4, v Dv 6.
ModelShape small_mla() {
  ModelShape m;
  m.name = m.source = "small-mla";
  m.hidden_size = 64;
  m.intermediate_size = 128;
  m.num_layers = 2;
  m.num_heads = 4;
  m.num_kv_heads = 1;
  m.head_dim = 8 + 4;
  m.vocab_size = 1000;
  m.q_lora_rank = 32;
  m.kv_lora_rank = 16;
  m.qk_nope_head_dim = 8;
  m.qk_rope_head_dim = 4;
  m.v_head_dim = 6;
  validate_model_shape(m, "small-mla");
  return m;
}

// DeepSeek-V3's config.json fields the simulator reads (deepseek-ai/DeepSeek-V3
// inference/configs/config_671B.json under the Hugging Face names).
nlohmann::json deepseek_v3_config() {
  return {{"hidden_size", 7168}, {"intermediate_size", 18432}, {"moe_intermediate_size", 2048},
          {"n_routed_experts", 256}, {"n_shared_experts", 1}, {"num_experts_per_tok", 8}, {"first_k_dense_replace", 3},
          {"num_hidden_layers", 61}, {"num_attention_heads", 128}, {"num_key_value_heads", 128}, {"q_lora_rank", 1536},
          {"kv_lora_rank", 512}, {"qk_nope_head_dim", 128}, {"qk_rope_head_dim", 64}, {"v_head_dim", 128},
          {"vocab_size", 129280}, {"torch_dtype", "bfloat16"},
          {"quantization_config", {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"weight_block_size", {128, 128}}}}};
}

// One layer's operators by name (each appears once).
std::map<std::string, Operator> layer_ops(const ModelShape& m, const ForwardParams& p) {
  std::vector<Operator> ops;
  append_decoder_layers(ops, m, 1, m.hidden_size, p, "verify");
  std::map<std::string, Operator> by_name;
  for (const Operator& op : ops) {
    EXPECT_EQ(by_name.count(op.name), 0u) << "operator " << op.name << " appears twice";
    by_name[op.name] = op;
  }
  return by_name;
}

struct Expected {
  const char* name;
  double flops, bytes, weight_bytes, kv_bytes;
};

void expect_ops(const std::map<std::string, Operator>& ops, const std::vector<Expected>& want, const std::string& where) {
  for (const Expected& e : want) {
    SCOPED_TRACE(where + ", operator " + e.name);
    auto it = ops.find(e.name);
    ASSERT_NE(it, ops.end()) << "missing operator " << e.name;
    EXPECT_DOUBLE_EQ(it->second.flops, e.flops) << "FLOPs";
    EXPECT_DOUBLE_EQ(it->second.bytes, e.bytes) << "bytes";
    EXPECT_DOUBLE_EQ(it->second.weight_bytes, e.weight_bytes) << "weight bytes";
    EXPECT_DOUBLE_EQ(it->second.kv_bytes, e.kv_bytes) << "KV bytes";
  }
}

// The absorbed form (decode, verification, drafting) of one layer at B = 2 sequences, T = 3 new
// tokens, C = 10 cached, weights of 1 byte (the checkpoint's), activations of 2; by hand:
TEST(Mla, AbsorbedLayerMatchesTheFormulasAtASmallShape) {
  const ModelShape m = small_mla();
  for (int tp : {1, 2}) {
    ForwardParams p;
    p.batch = 2;
    p.tokens = 3;
    p.context = 10;
    p.tp = tp;
    p.weights.bytes.fill(1.0);
    p.act_bytes = 2;
    const double rows = 6;           // B·T
    const double nh = 4.0 / tp;      // heads per device
    const double keys = 10 + 2;      // C + (T + 1) / 2
    const double cached = 10 + 3;    // C + T
    const double w = 1, a = 2;
    // x: (6, 64) -> [q_c (32) | kv_c (16) | k_pe (4)], replicated on every device.
    const Expected qkv_a{"mla.qkv_a_proj", 2 * rows * 64 * 52, 64 * 52 * w + rows * (64 + 52) * a, 64 * 52 * w, 0};
    // q_c: (6, 32) -> q: (6, nh, 8 + 4).
    const Expected q_b{"mla.q_b_proj", 2 * rows * 32 * nh * 12, 32 * nh * 12 * w + rows * (32 + nh * 12) * a,
                       32 * nh * 12 * w, 0};
    // RMSNorms over q_c (32) and kv_c (16); RoPE over q_pe (nh, 4) and k_pe (4).
    const Expected q_norm{"mla.q_a_norm", 4 * rows * 32, 2 * rows * 32 * a, 0, 0};
    const Expected kv_norm{"mla.kv_a_norm", 4 * rows * 16, 2 * rows * 16 * a, 0, 0};
    const Expected rope{"mla.rope", 6 * rows * (nh + 1) * 4, 2 * rows * (nh + 1) * 4 * a, 0, 0};
    // W_UK per head: (nh, 6, 8) · (nh, 8, 16), 16-bit weights.
    const Expected uk{"mla.w_uk", 2 * rows * nh * 8 * 16, nh * 8 * 16 * a + rows * nh * (8 + 16) * a, nh * 8 * 16 * a, 0};
    // Attention over the latent: scores over 16 + 4, values over 16, for every head; the latent
    // (16 + 4 per token) read once per sequence, whatever the heads.
    const double kv = 2 * cached * (16 + 4) * a;
    const Expected att{"mla.attention", 2 * rows * keys * nh * (16 + 4 + 16), kv + rows * nh * (16 + 4 + 16) * a, 0, kv};
    // W_UV per head: (nh, 6, 16) · (nh, 16, 6).
    const Expected uv{"mla.w_uv", 2 * rows * nh * 16 * 6, nh * 16 * 6 * a + rows * nh * (16 + 6) * a, nh * 16 * 6 * a, 0};
    // o_proj: (6, nh·6) -> (6, 64).
    const Expected o{"o_proj", 2 * rows * nh * 6 * 64, nh * 6 * 64 * w + rows * (nh * 6 + 64) * a, nh * 6 * 64 * w, 0};
    const auto ops = layer_ops(m, p);
    expect_ops(ops, {qkv_a, q_b, q_norm, kv_norm, rope, uk, att, uv, o}, "absorbed, tp " + std::to_string(tp));
    EXPECT_EQ(ops.count("qkv_proj") + ops.count("attention") + ops.count("mla.kv_b_proj"), 0u)
        << "the absorbed form has no grouped-query operators and no up-projection of the cache (tp " << tp << ")";
    // The whole attention block, summed: one number to read a regression from.
    double flops = 0;
    for (const Expected& e : {qkv_a, q_b, q_norm, kv_norm, rope, uk, att, uv, o}) flops += e.flops;
    double got = 0;
    for (const auto& [name, op] : ops)
      if (name.rfind("mla.", 0) == 0 || name == "o_proj") got += op.flops;
    EXPECT_DOUBLE_EQ(got, flops) << "attention block FLOPs at tp " << tp;
    if (tp == 1) EXPECT_DOUBLE_EQ(flops, 39936 + 18432 + 768 + 384 + 720 + 6144 + 20736 + 4608 + 18432);
  }
}

// A prompt's prefill runs the unabsorbed form: kv_b_proj up-projects every key's latent (the
// cached context's too), then multi-head attention over q (Dn + Dr) and v (Dv) per head.
TEST(Mla, PrefillUsesTheUnabsorbedForm) {
  const ModelShape m = small_mla();
  ForwardParams p;
  p.batch = 2;
  p.tokens = 3;
  p.context = 10;
  p.weights.bytes.fill(1.0);
  p.act_bytes = 2;
  p.prefill = true;
  const double rows = 6, nh = 4, keys = 12, cached = 13, a = 2, w = 1;
  // kv_c: (2·13, 16) -> [k_nope | v]: (26, 4, 8 + 6), at the checkpoint's weight width.
  const Expected kv_b{"mla.kv_b_proj", 2 * 26 * 16 * nh * 14, 16 * nh * 14 * w + 26 * (16 + nh * 14) * a, 16 * nh * 14 * w,
                      2 * 10 * 16 * a};
  // MHA: q·k over 8 + 4, p·v over 6, per head; the up-projected K and V of every key read.
  const double kpe = 2 * 10 * 4 * a;
  const Expected mha{"mla.attention.mha", 2 * rows * keys * nh * (12 + 6),
                     kpe + 2 * cached * nh * (12 + 6) * a + rows * nh * (12 + 6) * a, 0, kpe};
  const auto ops = layer_ops(m, p);
  expect_ops(ops, {kv_b, mha}, "unabsorbed (prefill)");
  EXPECT_EQ(ops.count("mla.w_uk") + ops.count("mla.w_uv") + ops.count("mla.attention"), 0u)
      << "the prefill has no absorbed products";
}

// Without query compression (q_lora_rank null: DeepSeek-V2-Lite) the query is projected directly
// and only the KV down-projection is replicated.
TEST(Mla, WithoutQueryCompressionTheQueryIsProjectedDirectly) {
  ModelShape m = small_mla();
  m.q_lora_rank = 0;
  ForwardParams p;
  p.tp = 2;
  const auto ops = layer_ops(m, p);
  ASSERT_TRUE(ops.count("mla.q_proj") && ops.count("mla.kv_a_proj")) << "q_proj and kv_a_proj without q_lora_rank";
  EXPECT_DOUBLE_EQ(ops.at("mla.q_proj").flops, 2.0 * 1 * 64 * 2 * 12) << "q_proj over this device's 2 heads";
  EXPECT_DOUBLE_EQ(ops.at("mla.kv_a_proj").flops, 2.0 * 1 * 64 * 20) << "kv_a_proj replicated";
  EXPECT_EQ(ops.count("mla.qkv_a_proj") + ops.count("mla.q_a_norm"), 0u);
  // Parameters: q_proj 64·4·12, kv_a 64·20 + 16, kv_b 16·4·14, o_proj 4·6·64.
  EXPECT_DOUBLE_EQ(m.attention_params_per_layer(), 64.0 * 48 + 64 * 20 + 16 + 16 * 56 + 24 * 64);
}

// DeepSeek-V3 from its published config: 671B parameters, 37B active, its MoE structure, FP8
// weights, and a KV cache of one 576-element latent per token and layer.
TEST(Mla, DeepSeekV3MatchesItsPublishedShape) {
  SpecLibrary lib;
  for (const char* name : {"deepseek-v3", "deepseek-r1"}) {
    SCOPED_TRACE(name);
    const ModelShape m = lib.model(name);
    EXPECT_TRUE(m.is_mla());
    EXPECT_EQ(m.kv_lora_rank, 512);
    EXPECT_EQ(m.q_lora_rank, 1536);
    EXPECT_EQ(m.num_kv_heads, 1) << "one shared latent";
    EXPECT_EQ(m.num_experts, 256);
    EXPECT_EQ(m.experts_per_token, 8);
    EXPECT_EQ(m.shared_expert_intermediate_size, 2048) << "1 shared expert of moe_intermediate_size";
    EXPECT_EQ(m.dense_layers, 3) << "first_k_dense_replace";
    EXPECT_EQ(m.intermediate_size, 18432) << "the dense layers' MLP";
    EXPECT_EQ(m.moe_layers(), 58);
    const ModelShape published = parse_model_shape(deepseek_v3_config(), "config_671B");
    EXPECT_DOUBLE_EQ(m.total_params(), published.total_params()) << "the spec is the published config";
    EXPECT_NEAR(m.total_params() / 671e9, 1.0, 0.01) << m.total_params();
    EXPECT_NEAR(m.active_params() / 37e9, 1.0, 0.03) << m.active_params();
    // Attention per layer, by hand: q_a 7168·1536 + norm 1536 + q_b 1536·128·192, kv_a 7168·576 +
    // norm 512 + kv_b 512·128·256, o_proj 128·128·7168.
    EXPECT_DOUBLE_EQ(m.attention_params_per_layer(), 7168.0 * 1536 + 1536 + 1536.0 * 128 * 192 + 7168.0 * 576 + 512 +
                                                         512.0 * 128 * 256 + 128.0 * 128 * 7168);
    // KV bytes per token: 61 layers × (512 + 64) elements × 2 bytes (BF16 cache), on every device.
    EXPECT_DOUBLE_EQ(m.kv_bytes_per_token(2.0), 61.0 * 576 * 2) << "61 layers x 576 x 2 bytes";
    EXPECT_DOUBLE_EQ(m.kv_elements_per_token_per_layer(8), 576.0) << "the latent is replicated under TP 8";
    // FP8 e4m3 in 128 × 128 blocks with an fp32 scale each; the embedding and LM head stay BF16.
    EXPECT_EQ(m.dtype, "fp8");
    const WeightBytes w = weight_bytes_of(m, "fp8");
    EXPECT_DOUBLE_EQ(w[WeightClass::attention], 1.0 + 4.0 / (128 * 128));
    EXPECT_DOUBLE_EQ(w[WeightClass::routed_experts], 1.0 + 4.0 / (128 * 128));
    EXPECT_DOUBLE_EQ(w[WeightClass::lm_head], 2.0);
    EXPECT_DOUBLE_EQ(w[WeightClass::embedding], 2.0);
    const WeightBytes bf16 = weight_bytes_of(m, "bf16");  // --dtype bf16: a dequantised copy, no scales
    EXPECT_DOUBLE_EQ(bf16[WeightClass::attention], 2.0);
    EXPECT_DOUBLE_EQ(bf16[WeightClass::lm_head], 2.0);
  }
}

// The memory check: DeepSeek-V3 in FP8 (671B weights) cannot fit one H200 (141 GB), and fits
// eight with TP 8; the KV cache per device is the replicated latent.
TEST(Mla, DeepSeekV3NeedsEightH200s) {
  SpecLibrary lib;
  Scenario s;
  s.target = lib.model("deepseek-v3");
  s.hardware = lib.hardware("h200");
  s.engine = lib.engine("vllm");
  s.workload.prompt_len = 512;
  s.workload.output_len = 256;
  s.workload.tp = 1;
  const Prediction one = predict(s);
  EXPECT_FALSE(one.fits_memory) << "weights per device " << one.weight_bytes_per_device / 1e9 << " GB on one H200";
  s.workload.tp = 8;
  s.workload.batch = 4;
  const Prediction eight = predict(s);
  EXPECT_TRUE(eight.fits_memory) << "weights per device " << eight.weight_bytes_per_device / 1e9 << " GB on TP 8";
  // By hand: linear layers at 1 byte + scales, embedding and head at 2, vLLM's 16-bit copies of
  // W_UK and W_UV (61 × 512·128·256 × 2 bytes), all split by 8.
  const ModelShape& m = s.target;
  const double linear = 1.0 + 4.0 / 16384;
  const double embed = 2.0 * 129280 * 7168;
  const double want = (m.total_params() * linear + embed * (2.0 - linear) + 61.0 * 512 * 128 * 256 * 2.0) / 8;
  EXPECT_NEAR(eight.weight_bytes_per_device / want, 1.0, 1e-12) << "weight bytes per device at TP 8";
  EXPECT_DOUBLE_EQ(eight.kv_bytes_per_device, 4.0 * (512 + 256) * 61 * 576 * 2) << "batch 4, 768 tokens, latent replicated";
}

// The MTP module's layer is the target's last kind: multi-head latent attention and the MoE.
TEST(Mla, DeepSeekV3MtpModuleIsAnMlaMoeLayer) {
  SpecLibrary lib;
  const ModelShape target = lib.model("deepseek-v3");
  const Drafter d = lib.drafter("mtp-deepseek-v3", target);
  EXPECT_TRUE(d.shape.is_mla());
  EXPECT_TRUE(d.shape.is_moe());
  EXPECT_EQ(d.shape.dense_layers, 0);
  ForwardParams p;
  p.tp = 8;
  p.context = 640;
  const std::vector<Operator> ops = mtp_module_forward(d.shape, p, "draft");
  bool latent = false, experts = false;
  for (const Operator& op : ops) {
    latent = latent || std::string(op.name) == "mla.attention";
    experts = experts || std::string(op.name) == "moe.experts";
    EXPECT_NE(std::string(op.name), "attention") << "no grouped-query attention in DeepSeek-V3's module";
  }
  EXPECT_TRUE(latent && experts) << "the module's layer has latent attention and routed experts";
  // The same module prices on DeepSeek-R1, which has the same shape.
  EXPECT_NO_THROW(lib.drafter("mtp-deepseek-v3", lib.model("deepseek-r1")));
  // Its published acceptance is the spec's default.
  const DrafterSpec spec = lib.drafter_spec("mtp-deepseek-v3");
  EXPECT_EQ(spec.default_category, "deepseek-v3-report");
  EXPECT_TRUE(spec.not_priced.empty());
}

// Bad MLA configs are refused naming the field; attention kinds still not priced are refused by
// name; EAGLE heads on an MLA target must say what attention they have.
TEST(Mla, BadConfigsAndUnpricedAttentionAreRefused) {
  auto says = [](const std::string& error, const std::string& what) {
    EXPECT_NE(error.find(what), std::string::npos) << "expected '" << what << "' in: " << error;
  };
  const nlohmann::json v3 = deepseek_v3_config();
  const ModelShape target = parse_model_shape(v3, "deepseek-v3/config.json");  // priced, not refused
  EXPECT_TRUE(target.is_mla());
  nlohmann::json bad = v3;
  bad.erase("qk_rope_head_dim");
  says(error_of([&] { parse_model_shape(bad, "ds/config.json"); }),
       "ds/config.json (multi-head latent attention): missing required field 'qk_rope_head_dim'");
  bad = v3;
  bad["v_head_dim"] = 0;
  says(error_of([&] { parse_model_shape(bad, "ds/config.json"); }), "'v_head_dim (multi-head latent attention, kv_lora_rank 512)' must be > 0");
  bad = v3;
  bad["kv_lora_rank"] = 1 << 20;
  says(error_of([&] { parse_model_shape(bad, "ds/config.json"); }), "'kv_lora_rank' is 1048576, more than the simulator supports");
  bad = v3;
  bad["quantization_config"]["weight_block_size"] = {128};
  says(error_of([&] { parse_model_shape(bad, "ds/config.json"); }),
       "ds/config.json (quantization_config): 'weight_block_size' must be two positive integers");
  bad = v3;
  bad["sliding_window"] = 4096;
  says(error_of([&] { parse_model_shape(bad, "ds/config.json"); }), "a sliding window with multi-head latent attention is not priced");
  // Still not priced: DeepSeek Sparse Attention and linear attention.
  nlohmann::json sparse = v3;
  sparse["index_topk"] = 2048;
  sparse["index_n_heads"] = 64;
  says(error_of([&] { parse_model_shape(sparse, "deepseek-v3.2/config.json"); }),
       "deepseek-v3.2/config.json: DeepSeek Sparse Attention (index_topk 2048");
  nlohmann::json linear = {{"hidden_size", 2048}, {"num_hidden_layers", 48}, {"num_attention_heads", 16},
                           {"num_key_value_heads", 2}, {"vocab_size", 151936}, {"intermediate_size", 5632},
                           {"full_attention_interval", 4}};
  says(error_of([&] { parse_model_shape(linear, "qwen3-next/config.json"); }), "linear-attention layers");
  // An EAGLE head on a latent-attention target is a Llama-style layer: its spec gives its heads.
  nlohmann::json head = {{"name", "eagle3-ds"}, {"method", "eagle3"}, {"target", "deepseek-v3"}};
  says(error_of([&] { resolve_drafter(parse_drafter_spec(head, "eagle3-ds.json"), target); }),
       "drafter 'eagle3-ds': target 'deepseek-v3/config.json' uses multi-head latent attention, and an eagle3 head is a Llama-style layer");
  head["config"] = {{"num_attention_heads", 32}, {"num_key_value_heads", 8}, {"head_dim", 128}};
  const Drafter d = resolve_drafter(parse_drafter_spec(head, "eagle3-ds.json"), target);
  EXPECT_FALSE(d.shape.is_mla()) << "the head's own grouped-query attention";
  EXPECT_EQ(d.shape.num_kv_heads, 8);
}

}  // namespace
}  // namespace specdec::sim
