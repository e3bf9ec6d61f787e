#include "simulator/hardware_spec.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/io/json_int.hpp"
#include "simulator/join.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

double HardwareSpec::peak_flops(const std::string& compute_dtype) const {
  auto it = peak_flops_per_s.find(compute_dtype);
  if (it == peak_flops_per_s.end()) {
    std::vector<std::string> names;
    for (const auto& [k, v] : peak_flops_per_s) names.push_back(k);
    const std::string have = join_names(names);
    throw Error("hardware '" + name + "' has no peak_flops_per_s entry for dtype '" + compute_dtype +
                "' (it has: " + have + ")");
  }
  return it->second;
}

double HardwareSpec::ridge_point(const std::string& compute_dtype) const {
  return peak_flops(compute_dtype) * compute_efficiency /
         (memory_bandwidth_bytes_per_s * memory_efficiency);
}

// Physically plausible bounds of a device's numbers, each far outside every real device (B200:
// 192 GB at 8 TB/s, about 1e16 FLOP/s at FP4; a CPU socket: terabytes at tens of GB/s) and far
// inside what keeps the cost model's times finite and meaningful: a bandwidth of 1e-308 bytes/s
// or a peak of 1e30 FLOP/s is a typo, not a device.
constexpr double kMinMemoryBytes = 1e6, kMaxMemoryBytes = 1e15;  // 1 MB .. 1 PB per device
constexpr double kMinBandwidth = 1e6, kMaxBandwidth = 1e15;      // 1 MB/s .. 1 PB/s
constexpr double kMinFlops = 1e6, kMaxFlops = 1e18;              // 1 MFLOP/s .. 1 EFLOP/s per device
constexpr double kMaxInstancePrice = 1e6;                        // USD per instance-hour
constexpr double kMaxOverheadSeconds = 1.0;                      // a kernel floor or collective latency

HardwareSpec parse_hardware_spec(const nlohmann::json& j, const std::string& source) {
  check_known_fields(j,
                     {"name", "kind", "memory_bytes", "memory_bandwidth_bytes_per_s", "peak_flops_per_s",
                      "interconnect_bandwidth_bytes_per_s", "devices_per_instance",
                      "price_per_instance_hour", "efficiency", "roofline", "gemm", "overhead", "measured"},
                     source);
  HardwareSpec h;
  h.name = get_string(j, "name", source);
  h.description = get_string_or(j, "description", h.name, source);
  h.kind = get_string_or(j, "kind", "gpu", source);
  if (h.kind != "gpu" && h.kind != "neuron" && h.kind != "cpu")
    throw Error(source + ": field 'kind' must be gpu, neuron or cpu, got '" + h.kind + "'");
  h.memory_bytes = get_number(j, "memory_bytes", source);
  require_in_range(h.memory_bytes, "memory_bytes", source, kMinMemoryBytes, kMaxMemoryBytes, false, "bytes");
  h.memory_bandwidth_bytes_per_s = get_number(j, "memory_bandwidth_bytes_per_s", source);
  require_in_range(h.memory_bandwidth_bytes_per_s, "memory_bandwidth_bytes_per_s", source, kMinBandwidth, kMaxBandwidth,
                   false, "bytes/s");
  if (!has_field(j, "peak_flops_per_s") || !j.at("peak_flops_per_s").is_object() ||
      j.at("peak_flops_per_s").empty())
    throw Error(source + ": field 'peak_flops_per_s' must be an object {dtype: FLOP/s}, e.g. {\"bf16\": 989e12}");
  for (const auto& [dtype, v] : j.at("peak_flops_per_s").items()) {
    if (!v.is_number()) throw Error(source + ": peak_flops_per_s." + dtype + " must be a number");
    require_in_range(v.get<double>(), "peak_flops_per_s." + dtype, source, kMinFlops, kMaxFlops, false, "FLOP/s");
    h.peak_flops_per_s[dtype] = v.get<double>();
  }
  h.interconnect_bandwidth_bytes_per_s = get_number_or(j, "interconnect_bandwidth_bytes_per_s", 0.0, source);
  require_in_range(h.interconnect_bandwidth_bytes_per_s, "interconnect_bandwidth_bytes_per_s", source, kMinBandwidth,
                   kMaxBandwidth, true, "bytes/s");
  h.devices_per_instance = get_int_in(j, "devices_per_instance", 1, 1, kMaxTensorParallel, source);
  h.price_per_instance_hour = get_number_or(j, "price_per_instance_hour", 0.0, source);
  require_in_range(h.price_per_instance_hour, "price_per_instance_hour", source, 0.0, kMaxInstancePrice, true, "USD");

  if (has_field(j, "efficiency")) {
    const auto& e = j.at("efficiency");
    const std::string s = source + " (efficiency)";
    check_known_fields(e, {"compute", "memory", "interconnect"}, s);
    h.compute_efficiency = get_number_or(e, "compute", h.compute_efficiency, s);
    h.memory_efficiency = get_number_or(e, "memory", h.memory_efficiency, s);
    h.interconnect_efficiency = get_number_or(e, "interconnect", h.interconnect_efficiency, s);
    for (auto [name, v] : {std::pair{"compute", h.compute_efficiency}, {"memory", h.memory_efficiency},
                           {"interconnect", h.interconnect_efficiency}}) {
      if (!(v > 0.0 && v <= 1.0))
        throw Error(source + ": efficiency." + name + " must be in (0, 1], got " + std::to_string(v));
    }
  }
  if (has_field(j, "roofline")) {
    const auto& r = j.at("roofline");
    const std::string s = source + " (roofline)";
    check_known_fields(r, {"gemm_tile_rows", "overlap_exponent"}, s);
    h.gemm_tile_rows = get_int_or(r, "gemm_tile_rows", 1, s);
    if (h.gemm_tile_rows < 1 || h.gemm_tile_rows > 4096)
      throw Error(s + ": field 'gemm_tile_rows' must be in [1, 4096], got " + std::to_string(h.gemm_tile_rows));
    h.overlap_exponent = get_number_or(r, "overlap_exponent", 0.0, s);
    if (!(h.overlap_exponent == 0.0 || (h.overlap_exponent >= 1.0 && h.overlap_exponent <= 64.0)))
      throw Error(s + ": field 'overlap_exponent' must be 0 (perfect overlap) or in [1, 64], got " +
                  std::to_string(h.overlap_exponent));
  }
  if (has_field(j, "gemm")) {
    const auto& g = j.at("gemm");
    const std::string s = source + " (gemm)";
    if (!g.is_object()) throw Error(s + ": must be an object {\"sm_count\": N, \"tiles\": [[rows, cols], ..]}");
    check_known_fields(g, {"sm_count", "tiles", "split_k_max", "l2_bandwidth_bytes_per_s"}, s);
    if (!has_field(g, "sm_count"))
      throw Error(s + ": field 'sm_count' is missing (the device's streaming multiprocessors, e.g. 132 on H100 SXM)");
    h.sm_count = get_int(g, "sm_count", s);
    if (h.sm_count < 1 || h.sm_count > 4096)
      throw Error(s + ": field 'sm_count' must be in [1, 4096], got " + std::to_string(h.sm_count));
    if (!has_field(g, "tiles") || !g.at("tiles").is_array() || g.at("tiles").empty() || g.at("tiles").size() > 32)
      throw Error(s + ": field 'tiles' must be a list of 1 to 32 [rows, cols] tile shapes, e.g. [[64, 128], [128, 256]]");
    for (const auto& t : g.at("tiles")) {
      if (!t.is_array() || t.size() != 2 || !t[0].is_number_integer() || !t[1].is_number_integer())
        throw Error(s + ": every entry of 'tiles' must be [rows, cols] (two integers), got " + t.dump());
      const int rows = json_int32(t[0], s + ": tile rows"), cols = json_int32(t[1], s + ": tile cols");
      if (rows < 1 || rows > 1024 || cols < 1 || cols > 1024)
        throw Error(s + ": tile " + t.dump() + " must have rows and cols in [1, 1024]");
      h.gemm_tiles.push_back({rows, cols});
    }
    h.split_k_max = get_int_or(g, "split_k_max", h.split_k_max, s);
    if (h.split_k_max < 1 || h.split_k_max > 256)
      throw Error(s + ": field 'split_k_max' must be in [1, 256], got " + std::to_string(h.split_k_max));
    h.l2_bandwidth_bytes_per_s = get_number_or(g, "l2_bandwidth_bytes_per_s", 0.0, s);
    require_in_range(h.l2_bandwidth_bytes_per_s, "l2_bandwidth_bytes_per_s", s, kMinBandwidth, kMaxBandwidth, true, "bytes/s");
    // The smallest tile's rows are where a batch fills a tile (the knee the tests and docs use).
    if (!(has_field(j, "roofline") && has_field(j.at("roofline"), "gemm_tile_rows"))) {
      int least = h.gemm_tiles.front().rows;
      for (const auto& t : h.gemm_tiles) least = std::min(least, t.rows);
      h.gemm_tile_rows = least;
    }
  }
  if (has_field(j, "overhead")) {
    const auto& o = j.at("overhead");
    const std::string s = source + " (overhead)";
    for (const char* moved : {"step_s", "draft_step_s", "spec_step_s"})
      if (has_field(o, moved))
        throw Error(s + ": field '" + moved +
                    "' is host time of the engine, not of the hardware: it belongs in an engine spec "
                    "(simulator/specs/engines/*.json, chosen with --engine)");
    check_known_fields(o, {"kernel_floor_s", "comm_latency_s"}, s);
    h.kernel_floor_s = get_number_or(o, "kernel_floor_s", 0.0, s);
    h.comm_latency_s = get_number_or(o, "comm_latency_s", 0.0, s);
    require_in_range(h.kernel_floor_s, "kernel_floor_s", s, 0.0, kMaxOverheadSeconds, true, "s");
    require_in_range(h.comm_latency_s, "comm_latency_s", s, 0.0, kMaxOverheadSeconds, true, "s");
  }
  return h;
}

HardwareSpec load_hardware_spec(const std::filesystem::path& path) {
  return parse_hardware_spec(read_json_file(path, "hardware spec"), path.filename().string());
}

nlohmann::json hardware_spec_to_json(const HardwareSpec& h, const nlohmann::json& sources) {
  nlohmann::json j;
  j["name"] = h.name;
  j["description"] = h.description;
  j["kind"] = h.kind;
  j["memory_bytes"] = h.memory_bytes;
  j["memory_bandwidth_bytes_per_s"] = h.memory_bandwidth_bytes_per_s;
  j["peak_flops_per_s"] = h.peak_flops_per_s;
  j["interconnect_bandwidth_bytes_per_s"] = h.interconnect_bandwidth_bytes_per_s;
  j["devices_per_instance"] = h.devices_per_instance;
  j["price_per_instance_hour"] = h.price_per_instance_hour;
  j["efficiency"] = {{"compute", h.compute_efficiency},
                     {"memory", h.memory_efficiency},
                     {"interconnect", h.interconnect_efficiency}};
  j["roofline"] = {{"gemm_tile_rows", h.gemm_tile_rows}, {"overlap_exponent", h.overlap_exponent}};
  if (!h.gemm_tiles.empty()) {
    nlohmann::json tiles = nlohmann::json::array();
    for (const auto& t : h.gemm_tiles) tiles.push_back({t.rows, t.cols});
    j["gemm"] = {{"sm_count", h.sm_count},
                 {"tiles", tiles},
                 {"split_k_max", h.split_k_max},
                 {"l2_bandwidth_bytes_per_s", h.l2_bandwidth_bytes_per_s}};
  }
  j["overhead"] = {{"kernel_floor_s", h.kernel_floor_s}, {"comm_latency_s", h.comm_latency_s}};
  if (!sources.is_null()) j["sources"] = sources;
  return j;
}

}  // namespace specdec::sim
