#include "simulator/cost_model.hpp"

#include <algorithm>

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

OpCost cost_operator(const Operator& op, const HardwareSpec& hw, const std::string& compute_dtype) {
  OpCost c;
  c.op = op;
  if (op.collective) {
    if (hw.interconnect_bandwidth_bytes_per_s <= 0)
      throw Error("hardware '" + hw.name +
                  "' has no interconnect_bandwidth_bytes_per_s, so tensor parallelism cannot be costed");
    c.time_s = hw.comm_latency_s + op.comm_bytes / (hw.interconnect_bandwidth_bytes_per_s * hw.interconnect_efficiency);
    c.bound = "comm";
  } else {
    const double compute = op.flops / (hw.peak_flops(compute_dtype) * hw.compute_efficiency);
    const double memory = op.bytes / (hw.memory_bandwidth_bytes_per_s * hw.memory_efficiency);
    c.time_s = std::max({compute, memory, hw.kernel_floor_s});
    c.bound = c.time_s == hw.kernel_floor_s && hw.kernel_floor_s > std::max(compute, memory) ? "floor"
              : compute >= memory                                                             ? "compute"
                                                                                              : "memory";
  }
  c.total_s = c.time_s * op.count;
  return c;
}

std::vector<OpCost> cost_operators(const std::vector<Operator>& ops, const HardwareSpec& hw,
                                   const std::string& compute_dtype, double* total_s) {
  std::vector<OpCost> out;
  out.reserve(ops.size());
  double sum = 0;
  for (const auto& op : ops) {
    out.push_back(cost_operator(op, hw, compute_dtype));
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
