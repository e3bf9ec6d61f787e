#pragma once
// A hardware device (one GPU, one NeuronCore, one CPU socket) as the cost model sees it: peak
// rates, the fraction of them real kernels achieve, per-kernel and per-step overheads, and the
// interconnect used for tensor parallelism. Loaded from simulator/specs/hardware/*.json.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace specdec::sim {

struct HardwareSpec {
  std::string name;         // e.g. "h100-sxm"
  std::string description;  // human-readable
  std::string kind = "gpu"; // gpu | neuron | cpu
  double memory_bytes = 0;                  // per device
  double memory_bandwidth_bytes_per_s = 0;  // per device, peak
  std::map<std::string, double> peak_flops_per_s;  // per device, dense, by compute dtype
  double interconnect_bandwidth_bytes_per_s = 0;   // per device, one direction; 0 = no TP
  int devices_per_instance = 1;    // devices one rentable instance holds
  double price_per_instance_hour = 0;  // USD, on demand; 0 = unknown

  // Achievable fractions of the peaks (fitted by calibration).
  double compute_efficiency = 0.7;
  double memory_efficiency = 0.8;
  double interconnect_efficiency = 0.7;
  // Overheads, seconds (fitted by calibration).
  double kernel_floor_s = 0;      // smallest time any kernel takes (launch + sync)
  double step_overhead_s = 0;     // per target forward: scheduling, sampling, host work
  double comm_latency_s = 0;      // per collective (all-reduce / all-gather)
  // Per-method engine overheads, keyed by method name ("eagle3", ...; "default" applies otherwise).
  std::map<std::string, double> draft_step_overhead_s;  // per drafter forward
  std::map<std::string, double> spec_step_overhead_s;   // per speculative iteration

  double peak_flops(const std::string& compute_dtype) const;  // throws if the dtype is absent
  double draft_step_overhead(const std::string& method) const;
  double spec_step_overhead(const std::string& method) const;
  double price_per_device_hour() const { return price_per_instance_hour / devices_per_instance; }
  // Arithmetic intensity (FLOP per byte) above which a kernel is compute bound.
  double ridge_point(const std::string& compute_dtype) const;
};

HardwareSpec parse_hardware_spec(const nlohmann::json& j, const std::string& source);
HardwareSpec load_hardware_spec(const std::filesystem::path& path);
// The JSON form parse_hardware_spec reads (sources are not kept; pass them in `sources`).
nlohmann::json hardware_spec_to_json(const HardwareSpec& h, const nlohmann::json& sources = nullptr);

}  // namespace specdec::sim
