#pragma once
// Roofline timing of operators on a device: an operator takes the longest of its compute time
// (FLOPs at the achievable fraction of peak), its memory time (bytes at the achievable fraction
// of bandwidth) and the per-kernel floor times the kernels it launches (Operator::kernels); a
// collective takes a latency plus its bytes over the interconnect.
#include <string>
#include <vector>

#include "simulator/hardware_spec.hpp"
#include "simulator/operators.hpp"

namespace specdec::sim {

struct OpCost {
  Operator op;
  double time_s = 0;   // one run
  double total_s = 0;  // time_s × count
  const char* bound = "";  // "compute", "memory", "floor", "launch", "comm", "host"
};

// The compute dtype used for a storage dtype on this hardware (e.g. fp32 weights on fp32 units;
// int8/mxfp4 weights compute in bf16 unless the hardware lists them).
std::string compute_dtype_for(const HardwareSpec& hw, const std::string& storage_dtype);
// The compute dtype of a matrix product over weights stored as `weight_dtype`: NVFP4 (weights and
// activations 4-bit) at the fp4 rate where the hardware has one (Blackwell), else dequantised to
// 16-bit as the engines' weight-only FP4 kernels do on Hopper and Ampere; fp8 at fp8 where it exists.
std::string gemm_compute_dtype(const HardwareSpec& hw, const std::string& weight_dtype);

// `launch_floor_s`: the least time an operator takes because the host launches its kernels one by
// one (an engine without CUDA graphs; EngineSpec::launch_floor_s), 0 otherwise.
OpCost cost_operator(const Operator& op, const HardwareSpec& hw, const std::string& compute_dtype,
                     double launch_floor_s = 0);
// The same with the compute dtype's peak FLOP/s already looked up (hw.peak_flops(dtype)): the
// cost model's inner loop, called for every operator of every scenario of a sweep.
OpCost cost_operator_at_peak(const Operator& op, const HardwareSpec& hw, double peak_flops_per_s,
                             double launch_floor_s = 0);
// The fraction of the compute rate `rate` (peak × compute_efficiency) a matrix product of
// rows × cols (output) over a reduction of `depth` achieves, in (0, 1]: the best of the spec's
// tiles by useful share of the tiles issued (rows and cols rounded up to tiles), of the waves over
// sm_count SMs (split-K fills a partial first wave) and of the tile's L2 operand feed, relative to
// the tile with the most operand reuse. Without tiles in the spec: rows / rows rounded up to
// gemm_tile_rows. cols = 0 (unknown) prices rows only. Tends to 1 for large products.
double gemm_efficiency(const HardwareSpec& hw, double rows, double cols, double depth, double rate);
// The time of one run of `op` alone (no OpCost built), and what bounds it when `bound` is given.
double operator_time(const Operator& op, const HardwareSpec& hw, double peak_flops_per_s, double launch_floor_s,
                     const char** bound = nullptr);
// Costs every operator; sums into `total_s` when given.
std::vector<OpCost> cost_operators(const std::vector<Operator>& ops, const HardwareSpec& hw,
                                   const std::string& compute_dtype, double* total_s = nullptr,
                                   double launch_floor_s = 0);

// A host-side overhead entry (no FLOPs or bytes) for breakdowns.
OpCost host_overhead(const char* name, const char* phase, double count, double seconds);

}  // namespace specdec::sim
