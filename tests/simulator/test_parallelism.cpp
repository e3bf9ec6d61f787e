// Data-parallel attention and expert parallelism in the simulator (docs/simulator.md "Parallel
// layouts", simulator/parallelism.hpp): the plain layout predicts exactly what the simulator
// predicted before the layouts existed, multi-head latent attention's KV cache per device shrinks by
// the DP degree, EP devices hold E / EP experts, the all-to-all and DP gather bytes against a hand
// computation, the busiest expert device, the MTP module under the layout, and every refusal.
#include <gtest/gtest.h>

#include <ios>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "simulator/operators.hpp"
#include "simulator/parallelism.hpp"
#include "simulator/prediction_json.hpp"
#include "simulator/scenario_options.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

struct Case {
  std::string name;
  ScenarioOptions options;
};

ScenarioOptions opts(const std::string& model, const std::string& hw, int tp, int batch) {
  ScenarioOptions o;
  o.model = model;
  o.hardware = hw;
  o.tp = tp;
  o.batch = batch;
  return o;
}

ScenarioOptions with_drafter(ScenarioOptions o, const std::string& drafter, int k, double alpha) {
  o.drafter = drafter;
  o.k = k;
  o.alpha = alpha;
  return o;
}

Prediction predict_options(const ScenarioOptions& o) {
  SpecLibrary lib;
  return predict(build_scenario(o, lib, kCommandLineSpelling).scenario);
}

// The simulator's predictions of these scenarios before data-parallel attention and expert
// parallelism were priced (`specdec simulate ... --json` of the commit before them), exact: tpot_ms,
// ttft_ms, sequential_tpot_ms, draft_flops_per_device, draft_weight_bytes_per_device,
// weight_bytes_per_device, kv_bytes_per_device, verify_flop_per_byte. Regenerated since, by the same
// command, only where the cost model changed on purpose: the engines' kernel fusions
// (simulator/kernel_fusion.hpp) and the current sglang and vllm releases hiding their step's host
// work behind the device (host_work), which moved tpot_ms and sequential_tpot_ms.
TEST(Parallelism, PlainLayoutPredictsBitForBitAsBefore) {
  ScenarioOptions ds = opts("deepseek-v3", "h200", 8, 1);
  ds.engine = "sglang";
  ds.prompt_len = 128;
  ds.output_len = 256;
  ScenarioOptions ds_mtp = with_drafter(opts("deepseek-v3", "h200", 8, 16), "mtp-deepseek-v3", 1, 0.85);
  ds_mtp.engine = "sglang";
  const std::vector<std::pair<Case, std::vector<double>>> cases = {
      {{"deepseek-v3 TP 8 batch 1", ds},
       {0x1.ecc2669a502d7p+2, 0x1.df11facef740ep+4, 0x1.ecc2669a502d7p+2, 0x0.0p+0, 0x0.0p+0, 0x1.3a5cfe724b800p+36,
        0x1.9bc0000000000p+24, 0x1.fe0c43207133dp+0}},
      {{"deepseek-v3 MTP TP 8 batch 16", ds_mtp},
       {0x1.77b3c2a063ad4p+3, 0x1.2a810c5d21879p+5, 0x1.e64b05d18ba3ep+3, 0x1.d33292d70a3d9p+33, 0x1.277eb0ccf4e11p+30, 0x1.3fc55c1abe000p+36,
        0x1.9bc0000000000p+29, 0x1.b9aa8ea1b0a41p+2}},
      {{"qwen3-30b-a3b EAGLE-3 TP 2 batch 8", with_drafter(opts("qwen3-30b-a3b", "h100-sxm", 2, 8), "eagle3-qwen3-30b-a3b", 4, 0.7)},
       {0x1.f1478b6775426p+1, 0x1.e251485637981p+3, 0x1.621cc7ae3a337p+2, 0x1.65eee5279a8e4p+32, 0x1.0900000000000p+29, 0x1.c940c20000000p+34,
        0x1.2000000000000p+28, 0x1.8fb9692d155bep+2}},
      {{"gpt-oss-120b P-EAGLE TP 4 batch 32", with_drafter(opts("gpt-oss-120b", "h100-sxm", 4, 32), "peagle-gpt-oss-120b", 4, 0.6)},
       {0x1.243df27674304p+2, 0x1.6751a6c2eb889p+3, 0x1.7f5cf5c6e6b5cp+2, 0x1.c96b77b2b64b2p+35, 0x1.acbb000000000p+28, 0x1.ea90b55000000p+33,
        0x1.b000000000000p+28, 0x1.87f341826dd45p+4}},
      {{"llama-3.1-70b EAGLE-3 TP 4 batch 4", with_drafter(opts("llama-3.1-70b", "a100-80gb-sxm", 4, 4), "eagle3-llama3.3-70b", 5, 0.75)},
       {0x1.3165c7878f765p+3, 0x1.9ddb520cb5728p+6, 0x1.b146cb77d5e96p+4, 0x1.446fdb7371000p+34, 0x1.9620000000000p+31, 0x1.0c4f420000000p+35,
        0x1.e000000000000p+27, 0x1.7c8c0bbf91d8ap+4}},
      {{"vicuna-13b Medusa TP 2 batch 2", with_drafter(opts("vicuna-13b", "h100-sxm", 2, 2), "medusa-vicuna-13b", 3, 0.6)},
       {0x1.a4ae54aa09b9dp+1, 0x1.c41d6fb042331p+3, 0x1.88d723b65d621p+2, 0x1.35a3f80000000p+30, 0x1.3563c00000000p+29, 0x1.a4218e0000000p+33,
        0x1.2c00000000000p+29, 0x1.f337be5f345d9p+2}},
      {{"glm-4.5 MTP TP 8 batch 4", with_drafter(opts("glm-4.5", "h200", 8, 4), "mtp-glm-4.5", 2, 0.8)},
       {0x1.a68b8195b5169p+2, 0x1.2b859f3d9de86p+5, 0x1.17726aba06ec8p+3, 0x1.fe07d7dd97f62p+31, 0x1.24b204509422cp+30, 0x1.4c4860c000000p+36,
        0x1.1400000000000p+27, 0x1.35979bca23244p+1}},
  };
  const char* keys[] = {"tpot_ms", "ttft_ms", "sequential_tpot_ms", "draft_flops_per_device",
                        "draft_weight_bytes_per_device", "weight_bytes_per_device", "kv_bytes_per_device",
                        "verify_flop_per_byte"};
  for (const auto& [c, golden] : cases) {
    const nlohmann::json j = prediction_json(predict_options(c.options), false);
    for (size_t i = 0; i < golden.size(); ++i)
      EXPECT_EQ(j.at(keys[i]).get<double>(), golden[i])
          << c.name << ": " << keys[i] << " moved (now " << std::hexfloat << j.at(keys[i]).get<double>() << ")";
  }
}

// A small MoE shape with grouped-query attention, every width distinct: H 64, 4 heads of 16,
// 2 KV heads, E 8 experts top-2 of width 32, vocabulary 1000.
ModelShape small_moe() {
  ModelShape m;
  m.name = m.source = "small-moe";
  m.hidden_size = 64;
  m.intermediate_size = 96;
  m.num_layers = 2;
  m.num_heads = 4;
  m.num_kv_heads = 2;
  m.head_dim = 16;
  m.vocab_size = 1000;
  m.num_experts = 8;
  m.experts_per_token = 2;
  m.expert_intermediate_size = 32;
  validate_model_shape(m, "small-moe");
  return m;
}

std::vector<Operator> layer_ops(const ModelShape& m, const ForwardParams& p) {
  std::vector<Operator> ops;
  append_decoder_layers(ops, m, 1, m.hidden_size, p, "verify");
  return ops;
}

const Operator* find_op(const std::vector<Operator>& ops, const std::string& name) {
  for (const Operator& op : ops)
    if (name == op.name) return &op;
  return nullptr;
}

// One attention group's rows are ⌈B / D⌉ sequences (the busiest group sets the step) at TP N / D.
TEST(Parallelism, AttentionRunsTheBusiestGroupsSequencesAtItsTp) {
  const ModelShape m = small_moe();
  ForwardParams dp;  // 4 devices, 2 groups of TP 2, batch 5 -> 3 sequences per group
  dp.tp = 4;
  dp.dp = 2;
  dp.batch = 5;
  dp.tokens = 3;
  dp.context = 100;
  ForwardParams alone = dp;  // what one group of 3 sequences at TP 2 runs
  alone.tp = 2;
  alone.dp = 1;
  alone.batch = 3;
  const auto a = layer_ops(m, dp), b = layer_ops(m, alone);
  for (const char* name : {"qkv_proj", "attention", "o_proj", "all_reduce.attn", "moe.router", "all_reduce.mlp"}) {
    const Operator* x = find_op(a, name);
    const Operator* y = find_op(b, name);
    ASSERT_TRUE(x && y) << name << " missing";
    EXPECT_EQ(x->flops, y->flops) << name << ": FLOPs of a group of 3 sequences at TP 2";
    EXPECT_EQ(x->bytes, y->bytes) << name << ": bytes of a group of 3 sequences at TP 2";
    EXPECT_EQ(x->comm_bytes, y->comm_bytes) << name << ": collective within the group";
  }
}

// The DP gathers (experts column-split over all N devices) and the EP all-to-alls, by hand.
TEST(Parallelism, CollectiveBytesMatchAHandComputation) {
  const ModelShape m = small_moe();
  const double H = 64, a = 2;
  ForwardParams p;
  p.tp = 2;
  p.dp = 2;
  p.batch = 5;  // 3 + 2 sequences; the busiest group has 3
  p.tokens = 3;
  p.context = 10;
  {
    p.ep = 1;
    const auto ops = layer_ops(m, p);
    const Operator* gather = find_op(ops, "moe.all_gather.dp");
    const Operator* scatter = find_op(ops, "moe.reduce_scatter.dp");
    ASSERT_TRUE(gather && scatter);
    // All 15 rows × H × 2 bytes; a device receives the other group's half; the ring
    // reduce-scatter over 2 devices sends half of the output.
    EXPECT_DOUBLE_EQ(gather->comm_bytes, 15 * H * a * 0.5) << "DP all-gather";
    EXPECT_DOUBLE_EQ(scatter->comm_bytes, 15 * H * a * 0.5) << "DP reduce-scatter";
    EXPECT_EQ(find_op(ops, "moe.dispatch"), nullptr) << "no all-to-all without EP";
    const Operator* ex = find_op(ops, "moe.experts");
    ASSERT_TRUE(ex);
    EXPECT_DOUBLE_EQ(ex->flops, 2.0 * 15 * 2 * 3 * H * 16) << "every row's 2 experts, half their columns";
  }
  {
    p.ep = 2;
    const auto ops = layer_ops(m, p);
    const Operator* dispatch = find_op(ops, "moe.dispatch");
    const Operator* combine = find_op(ops, "moe.combine");
    ASSERT_TRUE(dispatch && combine);
    // The busiest device sends its 3 × 3 = 9 tokens; the other device holds one of a token's 2
    // experts unless both are among this device's 4: 1 − C(4,2)/C(8,2) = 1 − 6/28.
    const double expected = 9 * (1.0 - 6.0 / 28.0) * H * a;
    EXPECT_NEAR(dispatch->comm_bytes, expected, 1e-9 * expected) << "EP dispatch";
    EXPECT_NEAR(combine->comm_bytes, expected, 1e-9 * expected) << "EP combine";
    EXPECT_EQ(find_op(ops, "moe.all_gather.dp"), nullptr) << "no DP gather under EP";
    const Operator* ex = find_op(ops, "moe.experts");
    ASSERT_TRUE(ex);
    // Uniform routing: 15 rows × 2 experts over 2 devices, full width; 4 experts each, each missed
    // by all 15 tokens with probability (1 − 2/8)^15.
    EXPECT_DOUBLE_EQ(ex->flops, 2.0 * 15 * 2 / 2 * 3 * H * 32) << "the device's token-expert rows";
    const double touched = 4 * (1 - std::pow(0.75, 15));
    EXPECT_NEAR(ex->weight_bytes, touched * 3 * H * 32 * 2, 1e-9) << "the device's touched experts, whole";
  }
  EXPECT_NEAR(remote_ranks_per_token(256, 8, 8), 7 * (1 - [] {
                double miss = 1;
                for (int i = 0; i < 8; ++i) miss *= (224.0 - i) / (256.0 - i);
                return miss;
              }()), 1e-12) << "DeepSeek-V3 at EP 8";
  EXPECT_EQ(remote_ranks_per_token(8, 2, 1), 0.0) << "EP 1 sends nothing";
}

// The busiest device under skewed popularity; at EP 1 it is the whole layer's expected coverage.
TEST(Parallelism, BusiestExpertDevice) {
  const double E = 128, k = 8, B = 16, T = 3, cv = 1.167;
  const ExpertRankLoad one = busiest_expert_rank(E, k, 1, B, T, 0.0, cv);
  EXPECT_NEAR(one.touched, expected_experts_touched(E, k, B, T, 0.0, cv), 1e-9) << "EP 1 = the layer's coverage";
  EXPECT_NEAR(one.rows, B * T * k, 1e-6) << "EP 1: every token-expert row";
  const ExpertRankLoad uniform = busiest_expert_rank(E, k, 8, B, T, 0.0, 0.0);
  EXPECT_DOUBLE_EQ(uniform.rows, B * T * k / 8) << "uniform: an even share";
  EXPECT_NEAR(uniform.touched, expected_experts_touched(E, k, B, T, 0.0, 0.0) / 8, 1e-9) << "uniform: an even share";
  const ExpertRankLoad skewed = busiest_expert_rank(E, k, 8, B, T, 0.0, cv);
  EXPECT_GT(skewed.rows, uniform.rows) << "skew loads the busiest device above the mean";
}

// Multi-head latent attention's latent is replicated over a group's devices, not over the replica:
// D groups keep 1/D of the batch's cache each. Grouped-query attention whose KV heads were split
// over all N devices gains nothing.
TEST(Parallelism, MlaKvCapacityGrowsByTheDpDegree) {
  ScenarioOptions o = opts("deepseek-v3", "h200", 8, 64);
  o.engine = "sglang";
  const double tp_only = predict_options(o).kv_bytes_per_device;
  for (int d : {2, 4, 8}) {
    o.dp_attention = d;
    EXPECT_DOUBLE_EQ(predict_options(o).kv_bytes_per_device, tp_only / d) << "deepseek-v3 TP 8, DP attention " << d;
  }
  ScenarioOptions g = opts("llama-3.1-70b", "h200", 8, 64);  // 8 KV heads: one per device at TP 8
  const double gqa = predict_options(g).kv_bytes_per_device;
  g.dp_attention = 8;
  EXPECT_DOUBLE_EQ(predict_options(g).kv_bytes_per_device, gqa) << "llama-3.1-70b: 8 groups x 8 KV heads = TP 8's";
  g.dp_attention = 1;
  g.batch = 5;  // DP 4 over 5 sequences: the busiest group has 2
  const double five = predict_options(g).kv_bytes_per_device;
  g.dp_attention = 4;
  EXPECT_DOUBLE_EQ(predict_options(g).kv_bytes_per_device, five / 5 * 2 * 4)
      << "llama-3.1-70b batch 5, DP 4: 2 sequences, 4 KV heads (TP 2) per device";
}

// EP: a device holds E / EP whole experts; everything else is split over one group's devices.
TEST(Parallelism, EpWeightBytesPerDevice) {
  SpecLibrary lib;
  const ModelShape m = lib.model("deepseek-v3");
  ScenarioOptions o = opts("deepseek-v3", "h200", 1, 1);
  const double all = predict_options(o).weight_bytes_per_device;  // every weight on one device
  const WeightBytes w = weight_bytes_of(m, m.dtype);
  const double expert = 3.0 * m.hidden_size * m.expert_intermediate_size * w[WeightClass::routed_experts];  // one expert, one layer
  const double routed = m.moe_layers() * m.num_experts * expert;
  EXPECT_DOUBLE_EQ(routed_expert_bytes(m, m.moe_layers(), w), routed);
  o.tp = 8;
  o.ep = 8;
  EXPECT_NEAR(predict_options(o).weight_bytes_per_device, (all - routed) / 8 + m.moe_layers() * (256 / 8) * expert,
              1e-6 * all) << "TP 8 attention, EP 8: 32 experts per layer on each device";
  o.dp_attention = 8;
  EXPECT_NEAR(predict_options(o).weight_bytes_per_device, (all - routed) + m.moe_layers() * (256 / 8) * expert,
              1e-6 * all) << "DP 8 attention: every non-expert weight on each device, 32 experts per layer";
  // At a batch that touches every expert the busiest device reads its 32 experts per layer.
  ForwardParams p;
  p.tp = 8;
  p.dp = 8;
  p.ep = 8;
  p.batch = 4096;
  p.weights = w;
  const auto ops = layer_ops(m, p);
  const Operator* ex = find_op(ops, "moe.experts");
  ASSERT_TRUE(ex);
  EXPECT_NEAR(ex->weight_bytes, 32 * expert, 1e-6 * expert) << "deepseek-v3 EP 8, batch 4096";
}

// EP ranks of several devices (TensorRT-LLM's MoE TP x EP, SGLang's --ep-size below --tp): each of
// the P ranks holds E / P experts column-split over N / P devices. The routed weights per device are
// every layout's E x 1/N; at a batch that touches every expert a device reads its rank's E / P
// experts' 1/(N/P) columns, the same bytes as plain TP and as EP = N; at batch 1 (8 of 256 experts
// touched) under uniform routing every layout reads one expert's worth per device. No token is dispatched: attention is tensor-parallel, every device holds every
// token, and the layer's all-reduce sums the ranks' outputs as under plain TP.
TEST(Parallelism, EpRanksOfSeveralDevicesSplitTheirExpertsColumns) {
  SpecLibrary lib;
  const ModelShape m = lib.model("deepseek-v3");
  const WeightBytes w = weight_bytes_of(m, m.dtype);
  const double expert = 3.0 * m.hidden_size * m.expert_intermediate_size * w[WeightClass::routed_experts];
  auto experts_op = [&](int ep, int batch) {
    ForwardParams p;
    p.tp = 8;
    p.ep = ep;
    p.batch = batch;
    p.weights = w;
    const auto ops = layer_ops(m, p);
    for (const char* collective : {"moe.dispatch", "moe.combine", "moe.all_gather.dp"})
      EXPECT_EQ(find_op(ops, collective), nullptr) << collective << " at EP " << ep;
    EXPECT_NE(find_op(ops, "all_reduce.mlp"), nullptr) << "EP " << ep << ": the ranks' partial outputs summed";
    const Operator* ex = find_op(ops, "moe.experts");
    EXPECT_TRUE(ex) << "EP " << ep;
    return ex ? *ex : Operator{};
  };
  const Operator plain = experts_op(1, 4096), ep2 = experts_op(2, 4096), ep4 = experts_op(4, 4096), ep8 = experts_op(8, 4096);
  for (const Operator& op : {ep2, ep4, ep8})
    EXPECT_NEAR(op.weight_bytes, 32 * expert, 1e-6 * expert) << "every expert touched: E / N experts' worth per device";
  EXPECT_NEAR(plain.weight_bytes, 32 * expert, 1e-6 * expert);
  // Batch 1 under uniform routing: every rank expects k / P of the token's experts, so each layout
  // reads one expert's worth per device (the model prices expected loads, not the maximum of a draw).
  const Operator one_plain = experts_op(1, 1), one_ep2 = experts_op(2, 1), one_ep8 = experts_op(8, 1);
  EXPECT_NEAR(one_ep2.weight_bytes, one_plain.weight_bytes, 1e-9 * expert);
  EXPECT_NEAR(one_ep8.weight_bytes, one_plain.weight_bytes, 1e-9 * expert);
  EXPECT_NEAR(one_ep2.flops, one_plain.flops, 1e-9 * one_plain.flops);
  EXPECT_EQ(one_ep2.gemm_depth, m.hidden_size);
  // A rank of four devices: its 4 touched experts' quarter columns, as wide as EP 8's one whole expert.
  EXPECT_NEAR(one_ep2.gemm_cols, 4 * 2.0 * m.expert_intermediate_size / 4, 1e-9 * one_ep8.gemm_cols);
  // The weights a device stores do not depend on the split of the experts.
  ScenarioOptions o = opts("deepseek-v3", "h200", 8, 1);
  const double stored = predict_options(o).weight_bytes_per_device;
  for (int ep : {2, 4, 8}) {
    o.ep = ep;
    EXPECT_NEAR(predict_options(o).weight_bytes_per_device, stored, 1e-9 * stored) << "EP " << ep;
  }
  o.ep = 2;
  EXPECT_NE(predict_options(o).tpot_s, predict_options(opts("deepseek-v3", "h200", 8, 1)).tpot_s);
}

// The MTP module runs under the target's layout: its MoE layer's experts are dispatched too.
TEST(Parallelism, MtpModuleUnderTheLayout) {
  ScenarioOptions o = with_drafter(opts("deepseek-v3", "h200", 8, 16), "mtp-deepseek-v3", 1, 0.85);
  o.engine = "sglang";
  o.dp_attention = 8;
  o.ep = 8;
  const Prediction r = predict_options(o);
  int dispatch = 0;
  for (const OpCost& c : r.step.ops)
    if (std::string(c.op.name) == "moe.dispatch" && std::string(c.op.phase) == "draft") dispatch += int(c.op.count);
  EXPECT_EQ(dispatch, 1) << "one MTP forward, one MoE layer";
  ScenarioOptions plain = o;
  plain.dp_attention = plain.ep = 1;
  EXPECT_LT(r.kv_bytes_per_device, predict_options(plain).kv_bytes_per_device) << "the layout's KV per device";
}

TEST(Parallelism, RefusalsNameTheProblem) {
  const auto refused = [](ScenarioOptions o, const OptionSpelling& sp = kCommandLineSpelling) {
    SpecLibrary lib;
    return error_of([&] { build_scenario(o, lib, sp); });
  };
  ScenarioOptions o = opts("deepseek-v3", "h200", 8, 1);
  o.dp_attention = 3;
  EXPECT_NE(refused(o).find("--dp-attention 3 does not divide the replica's 8 devices (--tp 8)"), std::string::npos)
      << refused(o);
  EXPECT_NE(refused(o, kKeywordSpelling).find("dp_attention=3 does not divide"), std::string::npos)
      << "Python's spelling: " << refused(o, kKeywordSpelling);
  o.dp_attention = 0;
  EXPECT_NE(refused(o).find("--dp-attention 0: the attention data-parallel degree must be >= 1"), std::string::npos)
      << refused(o);
  o.dp_attention = 1;
  o.ep = 0;
  EXPECT_NE(refused(o).find("--ep 0: the expert-parallel degree must be >= 1"), std::string::npos) << refused(o);
  o.ep = 3;
  EXPECT_NE(refused(o).find("--ep 3 does not divide the replica's 8 devices (--tp 8)"), std::string::npos) << refused(o);
  o.ep = 4;
  EXPECT_EQ(refused(o), "") << "EP 4 x expert TP 2 under tensor-parallel attention";
  o.dp_attention = 2;
  EXPECT_NE(refused(o).find("--ep 4 with --dp-attention 2 must be 1 or the replica's 8 devices"), std::string::npos)
      << refused(o);
  o.dp_attention = 1;
  ScenarioOptions dense = opts("llama-3.1-8b", "h100-sxm", 2, 1);
  dense.ep = 2;
  EXPECT_NE(refused(dense).find("model 'llama-3.1-8b' is dense"), std::string::npos) << refused(dense);
  ModelShape six = small_moe();
  six.num_experts = 6;  // EP 4 cannot split 6 experts
  EXPECT_NE(error_of([&] { validate_parallelism(Parallelism{4, 1, 4}, six); })
                .find("--ep 4 does not divide the 6 routed experts of model 'small-moe'"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { validate_parallelism(Parallelism{4, 2, 4}, small_moe()); }), "") << "a valid layout";
  ScenarioOptions heads = opts("llama-3.1-8b", "h100-sxm", 8, 1);  // 8 KV heads: attention TP 8 splits them
  heads.dp_attention = 8;
  EXPECT_EQ(refused(heads), "") << "DP attention on a dense model: per-group replicas";
  ScenarioOptions plan = opts("deepseek-v3", "h200", 8, 1);
  plan.capacity.emplace();
  plan.capacity->capacity_rate = 1;
  plan.capacity->tpot_target_ms = 50;
  plan.ep = 8;
  EXPECT_NE(refused(plan).find("capacity planning searches the layouts: give --dp-attention and --ep as the capacity plan's "
                                "lists of degrees to search"),
            std::string::npos)
      << refused(plan);
}

TEST(Parallelism, DescribesTheLayout) {
  EXPECT_EQ(describe_parallelism(Parallelism{8, 1, 1}), "TP 8");
  EXPECT_EQ(describe_parallelism(Parallelism{8, 8, 8}), "8 devices: attention DP 8 x TP 1, experts EP 8");
  EXPECT_EQ(describe_parallelism(Parallelism{8, 2, 1}), "8 devices: attention DP 2 x TP 4, experts TP 8");
  EXPECT_EQ(describe_parallelism(Parallelism{8, 1, 2}), "8 devices: attention DP 1 x TP 8, experts EP 2 x TP 4");
  EXPECT_EQ(sequences_per_attention_group(5, 2), 3);
  EXPECT_EQ(sequences_per_attention_group(1, 8), 1);
  EXPECT_EQ(sequences_per_attention_group(64, 8), 8);
}

}  // namespace
}  // namespace specdec::sim
