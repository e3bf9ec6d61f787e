#include "simulator/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "reference/core/error.hpp"

namespace specdec::sim {

std::string compute_dtype_for(const HardwareSpec& hw, const std::string& storage_dtype) {
  if (hw.peak_flops_per_s.count(storage_dtype)) return storage_dtype;
  if (storage_dtype == "bf16" && hw.peak_flops_per_s.count("fp16")) return "fp16";
  if (storage_dtype == "fp16" && hw.peak_flops_per_s.count("bf16")) return "bf16";
  if (storage_dtype != "fp32" && hw.peak_flops_per_s.count("bf16")) return "bf16";
  if (hw.peak_flops_per_s.count("fp32")) return "fp32";
  return hw.peak_flops_per_s.begin()->first;
}

// Compute and memory time of one kernel with partial overlap: the n-norm of the two (n = 0: max).
static double overlapped(double compute, double memory, double n) {
  if (n <= 0) return std::max(compute, memory);
  const double hi = std::max(compute, memory);
  if (hi <= 0) return 0;
  const double a = compute / hi, b = memory / hi;  // scaled so that the powers cannot overflow
  if (n == 2) return hi * std::sqrt(a * a + b * b);
  return hi * std::pow(std::pow(a, n) + std::pow(b, n), 1.0 / n);
}

OpCost cost_operator(const Operator& op, const HardwareSpec& hw, const std::string& compute_dtype,
                     double launch_floor_s) {
  // Collectives need no peak (and a spec without the dtype must still cost them).
  return cost_operator_at_peak(op, hw, op.collective ? 0.0 : hw.peak_flops(compute_dtype), launch_floor_s);
}

double operator_time(const Operator& op, const HardwareSpec& hw, double peak_flops_per_s, double launch_floor_s,
                     const char** bound) {
  if (op.collective) {
    if (hw.interconnect_bandwidth_bytes_per_s <= 0)
      throw Error("hardware '" + hw.name +
                  "' has no interconnect_bandwidth_bytes_per_s, so tensor parallelism cannot be costed");
    if (bound) *bound = "comm";
    return hw.comm_latency_s + op.comm_bytes / (hw.interconnect_bandwidth_bytes_per_s * hw.interconnect_efficiency);
  }
  double flops = op.flops;
  if (op.gemm_rows > 0 && hw.gemm_tile_rows > 1) {
    const double tile = hw.gemm_tile_rows;
    flops *= std::ceil(op.gemm_rows / tile) * tile / op.gemm_rows;
  }
  const double compute = flops / (peak_flops_per_s * hw.compute_efficiency);
  const double memory = op.bytes / (hw.memory_bandwidth_bytes_per_s * hw.memory_efficiency);
  const double body = overlapped(compute, memory, hw.overlap_exponent);
  const double floor = std::max(hw.kernel_floor_s, launch_floor_s);
  if (bound)
    *bound = launch_floor_s > std::max(body, hw.kernel_floor_s) ? "launch"
             : hw.kernel_floor_s > body                          ? "floor"
             : compute >= memory                                 ? "compute"
                                                                 : "memory";
  return std::max(body, floor);
}

OpCost cost_operator_at_peak(const Operator& op, const HardwareSpec& hw, double peak_flops_per_s,
                             double launch_floor_s) {
  OpCost c;
  c.op = op;
  c.time_s = operator_time(op, hw, peak_flops_per_s, launch_floor_s, &c.bound);
  c.total_s = c.time_s * op.count;
  return c;
}

std::vector<OpCost> cost_operators(const std::vector<Operator>& ops, const HardwareSpec& hw,
                                   const std::string& compute_dtype, double* total_s, double launch_floor_s) {
  std::vector<OpCost> out;
  out.reserve(ops.size());
  double sum = 0;
  const double peak = hw.peak_flops(compute_dtype);
  for (const auto& op : ops) {
    out.push_back(cost_operator_at_peak(op, hw, peak, launch_floor_s));
    sum += out.back().total_s;
  }
  if (total_s) *total_s = sum;
  return out;
}

OpCost host_overhead(const char* name, const char* phase, double count, double seconds) {
  OpCost c;
  c.op.name = name;
  c.op.phase = phase;
  c.op.count = count;
  c.time_s = seconds;
  c.total_s = seconds * count;
  c.bound = "host";
  return c;
}

}  // namespace specdec::sim
