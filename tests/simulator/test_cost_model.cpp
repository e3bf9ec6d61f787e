// Roofline costs: units, regimes (memory / compute / floor), the ridge point and tensor parallelism.
#include <gtest/gtest.h>

#include <cmath>

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

// Where the roofline bends: a matrix product's rows are rounded up to the tensor-core tile, and
// compute and memory overlap only in part (the n-norm of the two times).
TEST(CostModel, TileRoundingAndPartialOverlap) {
  HardwareSpec h = ideal();
  Operator gemm;
  gemm.bytes = 1e9;      // 1 ms of memory
  gemm.flops = 5e10;     // 50 us of compute at 5 rows
  gemm.gemm_rows = 5;
  EXPECT_DOUBLE_EQ(cost_operator(gemm, h, "bf16").time_s, 1e-3) << "perfect overlap: the larger of the two";
  h.gemm_tile_rows = 64;  // 5 rows cost what 64 do: 640 us of compute
  EXPECT_DOUBLE_EQ(cost_operator(gemm, h, "bf16").time_s, 1e-3);
  gemm.flops = 2e11;      // 0.2 ms for 10 rows; 1.28 ms of compute after rounding to 64
  gemm.gemm_rows = 10;
  OpCost c = cost_operator(gemm, h, "bf16");
  EXPECT_NEAR(c.time_s, 1.28e-3, 1e-12);
  EXPECT_STREQ(c.bound, "compute");
  gemm.gemm_rows = 640;   // a multiple of the tile: no rounding
  EXPECT_NEAR(cost_operator(gemm, h, "bf16").time_s, 1e-3, 1e-12);
  Operator other = gemm;  // not a matrix product: never rounded
  other.gemm_rows = 0;
  other.flops = 2e11;
  EXPECT_NEAR(cost_operator(other, h, "bf16").time_s, 1e-3, 1e-12);
  // Overlap exponent 2: at the ridge (compute = memory) a kernel takes sqrt(2) of either.
  h.gemm_tile_rows = 1;
  h.overlap_exponent = 2;
  gemm.flops = 1e12;  // 1 ms of compute
  EXPECT_NEAR(cost_operator(gemm, h, "bf16").time_s, std::sqrt(2.0) * 1e-3, 1e-12);
  h.overlap_exponent = 4;
  EXPECT_NEAR(cost_operator(gemm, h, "bf16").time_s, std::pow(2.0, 0.25) * 1e-3, 1e-12);
  gemm.flops = 1e9;  // far from the ridge: the larger time, almost exactly
  EXPECT_NEAR(cost_operator(gemm, h, "bf16").time_s / 1e-3, 1.0, 1e-9);
  // The floor still applies, and a zero-cost operator costs the floor (no 0/0).
  h.kernel_floor_s = 5e-6;
  Operator empty;
  c = cost_operator(empty, h, "bf16");
  EXPECT_DOUBLE_EQ(c.time_s, 5e-6);
  EXPECT_STREQ(c.bound, "floor");
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

// Verification cost stays nearly flat while batch × tokens is well below the ridge point and
// bends before reaching it (partial overlap of compute and memory), where a plain roofline
// (perfect overlap) would keep it flat up to the ridge.
TEST(CostModel, VerificationBendsBeforeTheRidgePoint) {
  SpecLibrary lib;
  Scenario s;
  s.target = lib.model("llama-3.1-8b");
  s.hardware = lib.hardware("h100-sxm");
  s.workload.prompt_len = 64;
  s.workload.output_len = 2;
  auto verify_time = [&](const HardwareSpec& hw, int batch, int tokens) {
    Scenario t = s;
    t.hardware = hw;
    t.workload.batch = batch;
    t.plan.method = Method::eagle3;
    t.plan.k = tokens - 1;
    t.drafter = lib.drafter("eagle3-llama3.1-8b", t.target);
    t.acceptance = iid_acceptance(0.5);
    return decode_step_cost(t, 64, 1.0).verify_s;
  };
  const HardwareSpec& hw = s.hardware;
  ASSERT_EQ(hw.overlap_exponent, 6.5);  // fitted to public GEMM sweeps (scripts/fit_overlap_exponent.py)
  ASSERT_EQ(hw.gemm_tile_rows, 64);
  HardwareSpec plain = hw;  // the plain roofline
  plain.overlap_exponent = 0;
  plain.gemm_tile_rows = 1;
  plain.gemm_tiles.clear();
  const double ridge = hw.ridge_point("bf16");
  ASSERT_GT(ridge, 200);
  ASSERT_LT(ridge, 300);
  const double t1 = verify_time(hw, 1, 2);
  EXPECT_NEAR(verify_time(hw, 1, 8) / t1, 1.0, 0.05) << "8 tokens at batch 1 are far below the ridge";
  EXPECT_LT(verify_time(hw, 8, 8) / t1, 1.10) << "64 tokens, a quarter of the ridge (" << ridge << ")";
  // 256 tokens, at the ridge: the plain roofline still calls it (almost) free; this model does not.
  const double at_ridge = verify_time(hw, 32, 8) / t1;
  const double at_ridge_plain = verify_time(plain, 32, 8) / verify_time(plain, 1, 2);
  EXPECT_LT(at_ridge_plain, 1.15);
  EXPECT_GT(at_ridge, 1.2) << "plain roofline " << at_ridge_plain;  // 1.23 at n = 6.5 (1.25+ at the old n = 2)
  EXPECT_GT(verify_time(hw, 256, 8) / t1, 2.0) << "2048 tokens are far above the ridge";
}

// GEMM efficiency by shape: the compute time of a product never falls with more rows, rises
// through several levels between one tile and a few hundred rows (not in one step), and reaches
// compute_efficiency for large products, as the single tile rounding did.
TEST(CostModel, GemmEfficiencyRisesGraduallyWithRows) {
  SpecLibrary lib;
  for (const std::string name : {"h100-sxm", "a100-80gb-sxm", "b200", "rtx-3090", "l40s"}) {
    const HardwareSpec hw = lib.hardware(name);
    ASSERT_FALSE(hw.gemm_tiles.empty()) << name;
    const double rate = hw.peak_flops("bf16") * hw.compute_efficiency;
    // Llama-3.1-8B's products: qkv, o, gate_up, down, LM head (N = output columns, K = depth).
    for (auto [n, k] : {std::pair{6144.0, 4096.0}, {4096.0, 4096.0}, {28672.0, 4096.0}, {4096.0, 14336.0},
                        {128256.0, 4096.0}}) {
      double prev_time = 0;
      for (double m = 1; m <= 8192; m += (m < 512 ? 1 : 16)) {
        const double eff = gemm_efficiency(hw, m, n, k, rate);
        ASSERT_GT(eff, 0) << name;
        ASSERT_LE(eff, 1 + 1e-12) << name;
        const double time = m / eff;  // compute time in units of one row at full rate
        EXPECT_GE(time, prev_time * (1 - 1e-12)) << name << " " << m << "x" << n << "x" << k;
        prev_time = time;
      }
      EXPECT_GT(gemm_efficiency(hw, 65536, n, k, rate), 0.99) << name << ": large products reach compute_efficiency";
    }
  }
  // On H100 (L2-fed tiles) efficiency at full tiles climbs through distinct levels: 64-row tiles
  // are fed worse than 128- and 256-row ones.
  const HardwareSpec h100 = lib.hardware("h100-sxm");
  const double rate = h100.peak_flops("bf16") * h100.compute_efficiency;
  const double e64 = gemm_efficiency(h100, 64, 4096, 4096, rate);
  const double e128 = gemm_efficiency(h100, 128, 4096, 4096, rate);
  const double e256 = gemm_efficiency(h100, 256, 4096, 4096, rate);
  const double e1024 = gemm_efficiency(h100, 1024, 4096, 4096, rate);
  EXPECT_LT(e64, e128);
  EXPECT_LE(e128, e256 * (1 + 1e-12));
  EXPECT_LE(e256, e1024 * (1 + 1e-12));
  EXPECT_LT(e64, 0.85 * e1024) << "a 64-row product is well below a large one";
  EXPECT_GT(e1024, 0.95);
}

// Without tiles in the spec a product is priced by gemm_tile_rows alone (the old behaviour), and
// with tiles the large-product limit is the same.
TEST(CostModel, GemmEfficiencyKeepsTheTileRoundingLimits) {
  HardwareSpec h = ideal();
  h.gemm_tile_rows = 64;
  EXPECT_DOUBLE_EQ(gemm_efficiency(h, 5, 4096, 4096, 1e15), 5.0 / 64);
  EXPECT_DOUBLE_EQ(gemm_efficiency(h, 65, 4096, 4096, 1e15), 65.0 / 128);
  EXPECT_DOUBLE_EQ(gemm_efficiency(h, 640, 0, 0, 1e15), 1.0);
  h.gemm_tile_rows = 1;
  EXPECT_DOUBLE_EQ(gemm_efficiency(h, 5, 4096, 4096, 1e15), 1.0);
  SpecLibrary lib;
  const HardwareSpec h100 = lib.hardware("h100-sxm");
  HardwareSpec old = h100;
  old.gemm_tiles.clear();
  Operator gemm;
  gemm.flops = 2.0 * 16384 * 4096 * 4096;
  gemm.bytes = 4096.0 * 4096 * 2;
  gemm.gemm_rows = 16384;
  gemm.gemm_cols = 4096;
  gemm.gemm_depth = 4096;
  EXPECT_NEAR(cost_operator(gemm, h100, "bf16").time_s / cost_operator(gemm, old, "bf16").time_s, 1.0, 0.01);
  // Fewer tiles than SMs: split-K fills the wave, but not beyond split_k_max or a short reduction.
  HardwareSpec w = ideal();
  w.sm_count = 100;
  w.gemm_tiles = {{64, 128}};
  w.split_k_max = 4;
  EXPECT_DOUBLE_EQ(gemm_efficiency(w, 64, 1280, 65536, 1e15), 40.0 / 100) << "10 tiles × 4 slices";
  EXPECT_DOUBLE_EQ(gemm_efficiency(w, 64, 1280, 256, 1e15), 10.0 / 100) << "a 256-deep reduction is not split";
  EXPECT_DOUBLE_EQ(gemm_efficiency(w, 64, 12800, 4096, 1e15), 1.0) << "100 tiles: one full wave";
  EXPECT_DOUBLE_EQ(gemm_efficiency(w, 32, 12800, 4096, 1e15), 0.5) << "half of each tile's rows unused";
}

// scripts/fit_overlap_exponent.py fits the overlap exponent with its own copy of these formulas;
// the two times it prints with --check (h100-sxm, bf16, M = 128, N = 6144, K = 4096) pin that copy
// to this one.
TEST(CostModel, OverlapExponentFitMatchesTheScript) {
  SpecLibrary lib;
  HardwareSpec h100 = lib.hardware("h100-sxm");
  Operator gemm;
  gemm.flops = 2.0 * 128 * 6144 * 4096;
  gemm.bytes = 6144.0 * 4096 * 2 + 128.0 * (4096 + 6144) * 2;
  gemm.gemm_rows = 128;
  gemm.gemm_cols = 6144;
  gemm.gemm_depth = 4096;
  h100.overlap_exponent = 2.0;
  EXPECT_NEAR(cost_operator(gemm, h100, "bf16").time_s * 1e6, 22.252816063, 1e-6);
  h100.overlap_exponent = 6.5;
  EXPECT_NEAR(cost_operator(gemm, h100, "bf16").time_s * 1e6, 19.800673503, 1e-6);
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
    p.weights = weight_bytes_of(m, m.dtype);  // the checkpoint's MXFP4 experts
    for (const auto& op : model_forward_ops(m, p, "decode"))
      if (std::string(op.name) == "moe.experts") return op.weight_bytes;
    return 0.0;
  };
  const double one = 3.0 * m.hidden_size * m.expert_intermediate_size * m.precision_of(WeightClass::routed_experts).bytes;
  EXPECT_NEAR(expert_bytes(1) / (4 * one), 1.0, 1e-9) << "batch 1 touches exactly k = 4 experts";
  EXPECT_GT(expert_bytes(16), expert_bytes(1) * 8);
  EXPECT_LE(expert_bytes(4096), 128 * one * (1 + 1e-9)) << "never more than all experts";
}

}  // namespace
}  // namespace specdec::sim
