// Roofline costs: units, regimes (memory / compute / floor), the ridge point and tensor parallelism.
#include <gtest/gtest.h>

#include "simulator/cost_model.hpp"
#include "simulator/predictor.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

HardwareSpec ideal(double bw = 1e12, double flops = 1e15) {
  HardwareSpec h;
  h.name = "ideal";
  h.memory_bytes = 1e12;
  h.memory_bandwidth_bytes_per_s = bw;
  h.peak_flops_per_s["bf16"] = flops;
  h.peak_flops_per_s["fp32"] = flops;
  h.interconnect_bandwidth_bytes_per_s = 1e11;
  h.devices_per_instance = 8;
  h.compute_efficiency = h.memory_efficiency = h.interconnect_efficiency = 1.0;
  return h;
}

TEST(CostModel, OperatorRegimesAndUnits) {
  HardwareSpec h = ideal();
  Operator op;
  op.bytes = 1e9;   // 1 GB at 1 TB/s = 1 ms
  op.flops = 1e9;   // 1 GFLOP at 1 PFLOP/s = 1 us
  op.count = 3;
  OpCost c = cost_operator(op, h, "bf16");
  EXPECT_DOUBLE_EQ(c.time_s, 1e-3);
  EXPECT_DOUBLE_EQ(c.total_s, 3e-3);
  EXPECT_STREQ(c.bound, "memory");
  h.memory_efficiency = 0.5;  // half the achievable bandwidth doubles a memory-bound op
  EXPECT_DOUBLE_EQ(cost_operator(op, h, "bf16").time_s, 2e-3);
  op.flops = 1e13;  // now 10 ms of compute
  c = cost_operator(op, h, "bf16");
  EXPECT_DOUBLE_EQ(c.time_s, 1e-2);
  EXPECT_STREQ(c.bound, "compute");
  op.flops = op.bytes = 1;
  h.kernel_floor_s = 5e-6;
  c = cost_operator(op, h, "bf16");
  EXPECT_DOUBLE_EQ(c.time_s, 5e-6);
  EXPECT_STREQ(c.bound, "floor");
  Operator ar;
  ar.collective = true;
  ar.comm_bytes = 1e8;
  h.comm_latency_s = 1e-5;
  EXPECT_DOUBLE_EQ(cost_operator(ar, h, "bf16").time_s, 1e-5 + 1e-3);
  h.interconnect_bandwidth_bytes_per_s = 0;
  EXPECT_NE(test::error_of([&] { cost_operator(ar, h, "bf16"); }).find("no interconnect_bandwidth"), std::string::npos);
}

// A batch-1 decode of a dense model reads every weight once: TPOT = weight bytes / bandwidth.
TEST(CostModel, DecodeTimeIsWeightBytesOverBandwidth) {
  SpecLibrary lib;
  Scenario s;
  s.target = lib.model("llama-2-7b");
  s.hardware = ideal(3.35e12);
  s.workload.prompt_len = 1;
  s.workload.output_len = 1;
  const Prediction p = predict(s);
  // Weights read per token: everything but the embedding table (one row of it is read).
  const double weights = (s.target.total_params() - double(s.target.vocab_size) * s.target.hidden_size) * 2.0;
  EXPECT_NEAR(p.tpot_s / (weights / 3.35e12), 1.0, 0.01) << "tpot " << p.tpot_s;
  EXPECT_DOUBLE_EQ(p.speedup, 1.0);
  EXPECT_DOUBLE_EQ(p.throughput_tokens_per_s, 1.0 / p.tpot_s);
  s.workload.batch = 8;
  EXPECT_NEAR(predict(s).throughput_tokens_per_s, 8.0 / predict(s).tpot_s, 1e-9);
  // The KV cache adds 2·L·nkv·hd·2 bytes per context token.
  Scenario longer = s;
  longer.workload.batch = 1;
  longer.workload.prompt_len = 4001;
  longer.workload.output_len = 2;  // mean context 4002 vs 2 before
  Scenario shorter = longer;
  shorter.workload.prompt_len = 1;
  const double extra = predict(longer).tpot_s - predict(shorter).tpot_s;
  EXPECT_NEAR(extra / (4000 * s.target.kv_bytes_per_token(2.0) / 3.35e12), 1.0, 0.01);
}

// Verification cost is flat while batch × tokens is below the ridge point, then rises.
TEST(CostModel, VerificationFlatUntilRidgePoint) {
  SpecLibrary lib;
  Scenario s;
  s.target = lib.model("llama-3.1-8b");
  s.hardware = lib.hardware("h100-sxm");
  s.workload.prompt_len = 64;
  s.workload.output_len = 2;
  auto verify_time = [&](int batch, int tokens) {
    Scenario t = s;
    t.workload.batch = batch;
    t.plan.method = Method::eagle3;
    t.plan.k = tokens - 1;
    t.drafter = lib.drafter("eagle3-llama3.1-8b", t.target);
    t.acceptance = iid_acceptance(0.5);
    return decode_step_cost(t, 64, 1.0).verify_s;
  };
  const double ridge = s.hardware.ridge_point("bf16");
  ASSERT_GT(ridge, 100);
  const double t1 = verify_time(1, 2);
  EXPECT_NEAR(verify_time(1, 8) / t1, 1.0, 0.05) << "8 tokens at batch 1 are far below the ridge";
  EXPECT_NEAR(verify_time(8, 8) / t1, 1.0, 0.25) << "64 tokens are still below the ridge (" << ridge << ")";
  EXPECT_GT(verify_time(256, 8) / t1, 2.0) << "2048 tokens are far above the ridge";
  // Monotone in tokens.
  double prev = 0;
  for (int b : {1, 2, 4, 8, 16, 32, 64, 128}) {
    const double t = verify_time(b, 8);
    EXPECT_GE(t, prev) << "batch " << b;
    prev = t;
  }
}

TEST(CostModel, TensorParallelSplitsWeightsAndAddsCollectives) {
  SpecLibrary lib;
  Scenario s;
  s.target = lib.model("llama-2-70b");
  s.hardware = ideal();
  const Prediction p1 = predict(s);
  s.workload.tp = 8;
  const Prediction p8 = predict(s);
  EXPECT_NEAR(p8.weight_bytes_per_device * 8 / p1.weight_bytes_per_device, 1.0, 1e-9);
  int collectives = 0;
  for (const auto& c : p8.step.ops) collectives += c.op.collective ? int(c.op.count) : 0;
  EXPECT_EQ(collectives, 2 * 80 + 1) << "two all-reduces per layer and one logits all-gather";
  EXPECT_LT(p8.tpot_s, p1.tpot_s / 4);
  // More devices than KV heads replicate them: 64-way TP of 8 KV heads keeps one per device.
  ForwardParams fp;
  fp.tp = 64;
  std::vector<Operator> ops;
  append_decoder_layers(ops, s.target, 1, s.target.hidden_size, fp, "verify");
  EXPECT_DOUBLE_EQ(ops[1].weight_bytes, s.target.hidden_size * (1 + 2 * 1) * 128 * 2.0) << ops[1].name;
}

TEST(CostModel, MoeReadsOnlyTouchedExperts) {
  SpecLibrary lib;
  const ModelShape m = lib.model("gpt-oss-120b");
  auto expert_bytes = [&](int batch) {
    ForwardParams p;
    p.batch = batch;
    for (const auto& op : model_forward_ops(m, p, "decode"))
      if (std::string(op.name) == "moe.experts") return op.weight_bytes;
    return 0.0;
  };
  const double one = 3.0 * m.hidden_size * m.expert_intermediate_size * m.expert_weight_bytes;
  EXPECT_NEAR(expert_bytes(1) / (4 * one), 1.0, 1e-9) << "batch 1 touches exactly k = 4 experts";
  EXPECT_GT(expert_bytes(16), expert_bytes(1) * 8);
  EXPECT_LE(expert_bytes(4096), 128 * one * (1 + 1e-9)) << "never more than all experts";
}

}  // namespace
}  // namespace specdec::sim
