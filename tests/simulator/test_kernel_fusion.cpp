// The kernels an engine launches for one decoder layer (simulator/kernel_fusion.hpp,
// docs/simulator.md "Kernels per layer"): one DeepSeek MLA + MoE layer's operators and their kernel
// counts against the module lists read from TensorRT-LLM's DeepSeek-R1 blog and SGLang's model
// code, the per-kernel floor, and what the fusions change (and do not) for a dense model.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "simulator/cost_model.hpp"
#include "simulator/kernel_fusion.hpp"
#include "simulator/operators.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

// One MoE layer of `model` at TP `tp`, batch 1, one new token over 1024 cached, with `engine`'s fusions.
std::vector<Operator> moe_layer(const std::string& model, const std::string& engine, int tp) {
  SpecLibrary lib;
  const ModelShape m = lib.model(model);
  ForwardParams p;
  p.tp = tp;
  p.context = 1024;
  p.weights = weight_bytes_of(m, m.dtype);
  p.fusion = lib.engine(engine).fusion;
  std::vector<Operator> ops;
  append_decoder_layers(ops, m, 1, m.hidden_size, p, "decode");
  return ops;
}

using Kernels = std::vector<std::pair<std::string, double>>;  // operator name, kernels per run

void expect_kernels(const std::vector<Operator>& ops, const Kernels& want, const std::string& where) {
  Kernels got;
  for (const Operator& op : ops) got.emplace_back(op.name, op.kernels);
  ASSERT_EQ(got.size(), want.size()) << where << ": operator count";
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first) << where << ": operator " << i;
    EXPECT_EQ(got[i].second, want[i].second) << where << ": kernels of " << want[i].first;
  }
}

double total_kernels(const std::vector<Operator>& ops) {
  double n = 0;
  for (const Operator& op : ops) n += op.kernels;
  return n;
}

// TensorRT-LLM's DeepSeek-R1 min-latency blog ('Everything in One Diagram'): the 13 modules of one
// MoE layer's decode iteration, with module 10 (router GEMM and top-k), 11 (the shared expert's
// gate/up, activation and down) and 12 (FC1 with its activation, FC2) more than one kernel each:
// 17 kernels, two of them the fused all-reduces.
TEST(KernelFusion, DeepSeekLayerOnTensorRtLlmIsTheBlogsModuleList) {
  const auto ops = moe_layer("deepseek-r1-nvfp4", "tensorrt-llm", 8);
  expect_kernels(ops,
                 {{"mla.qkv_a_proj", 1},      // 1 Fuse_A_GEMM
                  {"mla.qkv_a_norms", 1},     // 2 the two RMSNorms, one GroupedRMSNorm
                  {"mla.q_b_proj", 1},        // 3 UQ_QR_GEMM
                  {"mla.rope", 1},            // 5 concat KV cache and RoPE
                  {"mla.w_uk", 1},            // 4 UK_BGEMM
                  {"mla.attention", 1},       // 6 genAttention
                  {"mla.w_uv", 1},            // 7 UV_GEMM
                  {"o_proj", 1},              // 8 WO_GEMM
                  {"all_reduce.attn", 1},     // 9 one-shot all-reduce + add + RMSNorm + quantisation
                  {"moe.router", 1},          // 10 routerGEMM
                  {"moe.topk", 1},            // 10 topK
                  {"moe.experts", 2},         // 12 FC1 (+ activation), FC2
                  {"moe.shared_gate_up", 1},  // 11 shared expert
                  {"moe.shared_act_mul", 1},
                  {"moe.shared_down", 1},
                  {"all_reduce.mlp", 1}},     // 13 local reduction + all-reduce + add + RMSNorm
                 "deepseek-r1-nvfp4 on tensorrt-llm, TP 8");
  EXPECT_EQ(total_kernels(ops), 17) << "deepseek-r1-nvfp4 on tensorrt-llm: kernels of one MoE layer";
}

// SGLang (the versions of the published DeepSeek-V3 rows): every block-FP8 product quantises its
// input first, the routing is framework operations, the Triton fused MoE is five kernels plus two
// quantisations, the Triton decode attention two stages, and the latent is written by a kernel of
// its own; the residual add runs in the next RMSNorm.
TEST(KernelFusion, DeepSeekLayerOnSglangCountsItsUnfusedKernels) {
  const auto ops = moe_layer("deepseek-v3", "sglang", 8);
  expect_kernels(ops,
                 {{"input_norm", 1},
                  {"mla.qkv_a_proj", 2},  // per_token_group_quant_fp8 + the block-FP8 GEMM
                  {"mla.q_a_norm", 1},
                  {"mla.q_b_proj", 2},
                  {"mla.kv_a_norm", 1},
                  {"mla.rope", 1},
                  {"mla.cache_write", 1},
                  {"mla.w_uk", 1},
                  {"mla.attention", 2},  // split-KV stage and the reduce
                  {"mla.w_uv", 1},
                  {"o_proj", 2},
                  {"all_reduce.attn", 1},
                  {"post_attention_norm", 1},
                  {"moe.router", 1},  // unquantised gate
                  {"moe.topk", 8},
                  {"moe.experts", 7},  // align, w13, silu_and_mul, w2, sum + two quantisations
                  {"moe.shared_gate_up", 2},
                  {"moe.shared_act_mul", 1},
                  {"moe.shared_down", 2},
                  {"all_reduce.mlp", 1}},
                 "deepseek-v3 on sglang, TP 8");
  EXPECT_EQ(total_kernels(ops), 39) << "deepseek-v3 on sglang: kernels of one MoE layer";
}

// An engine without fusions keeps the operator list priced before they existed (plus the shared
// expert's activation, which every engine runs as a kernel).
TEST(KernelFusion, DefaultFusionIsOneKernelPerOperator) {
  const auto ops = moe_layer("deepseek-v3", "ideal", 8);
  for (const Operator& op : ops) EXPECT_EQ(op.kernels, 1) << "ideal engine: " << op.name;
  std::vector<std::string> names;
  for (const Operator& op : ops) names.push_back(op.name);
  const std::vector<std::string> want = {"input_norm", "mla.qkv_a_proj", "mla.q_a_norm", "mla.q_b_proj", "mla.kv_a_norm",
                                         "mla.rope", "mla.w_uk", "mla.attention", "mla.w_uv", "o_proj", "all_reduce.attn",
                                         "post_attention_norm", "moe.router", "moe.experts", "moe.shared_gate_up",
                                         "moe.shared_act_mul", "moe.shared_down", "all_reduce.mlp", "residual_add"};
  EXPECT_EQ(names, want) << "ideal engine: the layer's operators";
}

// Every kernel of an operator takes at least the hardware's floor (and, launched from the host
// without CUDA graphs, its launch); a body longer than the floors is unchanged.
TEST(KernelFusion, FloorAppliesPerKernel) {
  SpecLibrary lib;
  const HardwareSpec hw = lib.hardware("h200");
  ASSERT_GT(hw.kernel_floor_s, 0);
  Operator tiny;
  tiny.name = "tiny";
  tiny.bytes = 1000;
  for (double k : {1.0, 3.0, 8.0}) {
    tiny.kernels = k;
    EXPECT_DOUBLE_EQ(operator_time(tiny, hw, hw.peak_flops("bf16"), 0), k * hw.kernel_floor_s) << k << " kernels";
    EXPECT_DOUBLE_EQ(operator_time(tiny, hw, hw.peak_flops("bf16"), 1e-5), k * 1e-5) << k << " launched kernels";
  }
  Operator big;
  big.name = "big";
  big.bytes = 1e9;  // ~0.26 ms at H200's bandwidth, far above 8 floors
  const double one = operator_time(big, hw, hw.peak_flops("bf16"), 0);
  big.kernels = 8;
  EXPECT_DOUBLE_EQ(operator_time(big, hw, hw.peak_flops("bf16"), 0), one) << "a memory-bound body hides its floors";
}

// A dense model: the fusions remove only the residual-add kernel (vLLM's and SGLang's
// fused_add_rms_norm), so its step moves by exactly that kernel's time per layer; an engine
// without fusions (hf-eager) predicts what it did.
TEST(KernelFusion, DenseStepMovesByTheResidualAddAlone) {
  SpecLibrary lib;
  for (const char* engine : {"vllm", "sglang"}) {
    Scenario fused = test::scenario("llama-3-8b", "h100-sxm", "", 1, 0.0);
    fused.engine = lib.engine(engine);
    Scenario unfused = fused;
    unfused.engine.fusion = KernelFusion{};
    const double dt = predict(unfused).tpot_s - predict(fused).tpot_s;
    // residual_add at batch 1 is one floor-bound kernel per layer.
    EXPECT_NEAR(dt, 32 * fused.hardware.kernel_floor_s, 1e-12) << "llama-3-8b on " << engine;
  }
  Scenario eager = test::scenario("llama-3-8b", "h100-sxm", "", 1, 0.0);
  eager.engine = lib.engine("hf-eager");
  EXPECT_EQ(eager.engine.fusion, KernelFusion{}) << "hf-eager launches every operator's kernel";
}

TEST(KernelFusion, ParsesAndRefuses) {
  const nlohmann::json ok = {{"add_norm", true}, {"moe_expert_kernels", 3}, {"moe_routing_kernels", 0}};
  const KernelFusion f = parse_kernel_fusion(ok, "x.json");
  EXPECT_TRUE(f.add_norm);
  EXPECT_EQ(f.moe_expert_kernels, 3);
  EXPECT_EQ(parse_kernel_fusion(kernel_fusion_to_json(f), "round trip"), f) << "JSON round trip";
  EXPECT_NE(error_of([] { parse_kernel_fusion({{"moe_expert_kernel", 2}}, "x.json"); }).find("moe_expert_kernel"),
            std::string::npos) << "unknown field";
  EXPECT_NE(error_of([] { parse_kernel_fusion({{"moe_expert_kernels", 0}}, "x.json"); }).find("moe_expert_kernels"),
            std::string::npos) << "zero kernels";
  EXPECT_NE(error_of([] { parse_kernel_fusion({{"moe_routing_kernels", 0.5}}, "x.json"); }).find("moe_routing_kernels"),
            std::string::npos) << "half a kernel";
}

}  // namespace
}  // namespace specdec::sim
