// Multi-head latent attention in the simulator: one layer's operators against FLOPs and bytes
// written out by hand from the formulas at a small shape, and what is still refused.
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
    p.weight_bytes = 1;
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
  p.weight_bytes = 1;
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
