#pragma once
// A hardware device (one GPU, one NeuronCore, one CPU socket) as the cost model sees it: peak
// rates, the fraction of them real kernels achieve, per-kernel and per-step overheads, and the
// interconnect used for tensor parallelism. What the software adds (host time per forward, kernel
// launches) is the engine's: simulator/engine_spec.hpp. Loaded from simulator/specs/hardware/*.json.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

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
  // Where the roofline bends. A matrix product's compute is priced for its rows rounded up to a
  // multiple of gemm_tile_rows (the smallest tensor-core tile: a product of 5 rows costs what one
  // of 64 does); and a kernel's compute and memory phases overlap only in part:
  // t = (compute^n + memory^n)^(1/n) with n = overlap_exponent (0: perfect overlap, t = max).
  int gemm_tile_rows = 1;
  double overlap_exponent = 0;
  // GEMM efficiency by shape (the `gemm` block; cost_model.hpp gemm_efficiency). Without tiles a
  // matrix product is priced by gemm_tile_rows alone.
  struct GemmTile {
    int rows = 0, cols = 0;
  };
  std::vector<GemmTile> gemm_tiles;  // CTA tile shapes the GEMM library chooses from
  int sm_count = 0;                  // streaming multiprocessors: tiles run in waves of this many
  int split_k_max = 16;              // most slices the reduction dimension is split into
  double l2_bandwidth_bytes_per_s = 0;  // what feeds the tiles' operands; 0 = not limiting
  // Overheads, seconds (fitted by calibration).
  // (Host and engine overheads belong to the engine: simulator/engine_spec.hpp.)
  double kernel_floor_s = 0;      // smallest time any kernel takes on the device
  double comm_latency_s = 0;      // per collective (all-reduce / all-gather)

  double peak_flops(const std::string& compute_dtype) const;  // throws if the dtype is absent
  double price_per_device_hour() const { return price_per_instance_hour / devices_per_instance; }
  // Arithmetic intensity (FLOP per byte) above which a kernel is compute bound.
  double ridge_point(const std::string& compute_dtype) const;
};

HardwareSpec parse_hardware_spec(const nlohmann::json& j, const std::string& source);
HardwareSpec load_hardware_spec(const std::filesystem::path& path);
// The JSON form parse_hardware_spec reads (sources are not kept; pass them in `sources`).
nlohmann::json hardware_spec_to_json(const HardwareSpec& h, const nlohmann::json& sources = nullptr);

}  // namespace specdec::sim
