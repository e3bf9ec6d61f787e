#include "simulator/cost_model.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

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

std::string gemm_compute_dtype(const HardwareSpec& hw, const std::string& weight_dtype) {
  if (weight_dtype == "nvfp4") return hw.peak_flops_per_s.count("fp4") ? "fp4" : compute_dtype_for(hw, "bf16");
  return compute_dtype_for(hw, weight_dtype);
}

// Compute and memory time of one kernel with partial overlap: the n-norm of the two (n = 0: max).
static double overlapped(double compute, double memory, double n) {
  if (n <= 0) return std::max(compute, memory);
  const double hi = std::max(compute, memory);
  if (hi <= 0) return 0;
  const double a = compute / hi, b = memory / hi;  // scaled so that the powers cannot overflow
  if (n == 2) return hi * std::sqrt(a * a + b * b);
  // One of a, b is exactly 1 (and 1ⁿ = 1): one power fewer, the same value bit for bit. A sweep
  // prices the same kernels again for every acceptance rate, so the two powers are memoised per
  // thread by (ratio, n): a hit returns the stored factor, so the value is the same either way.
  const double r = std::min(a, b);
  struct Entry {
    double r = -1, n = 0, factor = 0;
  };
  thread_local std::array<Entry, 1024> memo;
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(r) * 0x9e3779b97f4a7c15ull ^ std::bit_cast<std::uint64_t>(n);
  Entry& e = memo[(bits >> 54) & (memo.size() - 1)];
  if (e.r != r || e.n != n) e = {r, n, std::pow(1.0 + std::pow(r, n), 1.0 / n)};
  return hi * e.factor;
}

OpCost cost_operator(const Operator& op, const HardwareSpec& hw, const std::string& compute_dtype,
                     double launch_floor_s) {
  // Collectives need no peak (and a spec without the dtype must still cost them).
  return cost_operator_at_peak(op, hw, op.collective ? 0.0 : hw.peak_flops(compute_dtype), launch_floor_s);
}

// Operand feed of one tile relative to what the tensor cores consume: a rows × cols tile does
// 2·rows·cols FLOPs per (rows + cols) operand elements it loads, 2 bytes each at the bf16 rate
// (`bf16_rate`; fp8 has twice the peak at half the width: the same bytes per second). The fraction
// of the compute rate left when that feed comes from L2 overlaps like compute and memory (n-norm).
static double tile_feed_efficiency(const HardwareSpec& hw, const HardwareSpec::GemmTile& t, double bf16_rate) {
  if (hw.l2_bandwidth_bytes_per_s <= 0) return 1.0;
  const double feed = bf16_rate * (t.rows + t.cols) * 2.0 / (2.0 * t.rows * t.cols) / hw.l2_bandwidth_bytes_per_s;
  return 1.0 / overlapped(1.0, feed, hw.overlap_exponent > 0 ? hw.overlap_exponent : 0.0);
}

static double gemm_efficiency_uncached(const HardwareSpec& hw, double rows, double cols, double depth, double rate);

namespace {
// Everything gemm_efficiency_uncached reads (the tile list by its hash), so a cached value is not stale.
struct GemmKey {
  double rows = -1, cols = 0, depth = 0, rate = 0, l2 = 0, n = 0, bf16_peak = 0;
  std::uint64_t tiles = 0;
  int sms = 0, split = 0;
  bool operator==(const GemmKey&) const = default;
};
// splitmix64's finaliser over the running hash: doubles such as 64.0 have all-zero low bits, so
// the low bits of the index must come from every bit of the key.
std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  std::uint64_t z = h ^ (v + 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

double gemm_efficiency(const HardwareSpec& hw, double rows, double cols, double depth, double rate) {
  if (!(rows > 0)) return 1.0;
  if (hw.gemm_tiles.empty()) {
    if (hw.gemm_tile_rows <= 1) return 1.0;
    const double tile = hw.gemm_tile_rows;
    return rows / (std::ceil(rows / tile) * tile);
  }
  // A sweep prices the same few shapes over and over (acceptance rates and lengths do not change
  // them): a small per-thread cache keeps the tile search off the sweep's inner loop.
  GemmKey key{rows, cols, depth, rate, hw.l2_bandwidth_bytes_per_s, hw.overlap_exponent, 0, 0, hw.sm_count,
              hw.split_k_max};
  if (key.l2 > 0) {  // the operand feed is priced at the bf16 rate
    const auto bf16 = hw.peak_flops_per_s.find("bf16");
    if (bf16 != hw.peak_flops_per_s.end()) key.bf16_peak = bf16->second;
  }
  // A 64-bit polynomial hash of the tile list (shapes are below 2^11 each), cheaper than a
  // comparison of the list; the index hash mixes the product's shape in.
  for (const auto& t : hw.gemm_tiles) key.tiles = key.tiles * 0x100000001b3ull + ((std::uint64_t(t.rows) << 11) | unsigned(t.cols));
  std::uint64_t h = mix(key.tiles, std::bit_cast<std::uint64_t>(rows));
  h = mix(h, std::bit_cast<std::uint64_t>(cols) ^ (std::bit_cast<std::uint64_t>(depth) >> 1) ^
                 (std::bit_cast<std::uint64_t>(rate) << 1));
  struct Entry {
    GemmKey key;
    double value = 0;
  };
  thread_local std::array<Entry, 512> cache;
  Entry& e = cache[h % cache.size()];
  if (!(e.key == key)) {
    e.key = key;
    e.value = gemm_efficiency_uncached(hw, rows, cols, depth, rate);
  }
  return e.value;
}

static double gemm_efficiency_uncached(const HardwareSpec& hw, double rows, double cols, double depth, double rate) {
  // Normalised to the tile with the most operand reuse, which large GEMMs use: a large product
  // keeps the spec's compute_efficiency exactly.
  constexpr size_t kMaxTiles = 32;
  std::array<double, kMaxTiles> feed{};
  const size_t ntiles = std::min(hw.gemm_tiles.size(), kMaxTiles);
  const auto bf16 = hw.peak_flops_per_s.find("bf16");
  const double bf16_rate = bf16 != hw.peak_flops_per_s.end() ? bf16->second * hw.compute_efficiency : rate;
  double best_feed = 0;
  for (size_t i = 0; i < ntiles; ++i)
    best_feed = std::max(best_feed, feed[i] = tile_feed_efficiency(hw, hw.gemm_tiles[i], bf16_rate));
  const double sms = hw.sm_count;
  // Split-K: below a few 64-deep k-steps per slice a slice cannot pipeline its loads.
  const double max_split = std::max(1.0, std::min<double>(hw.split_k_max, std::floor(depth / 256.0)));
  double best = 0;
  for (size_t i = 0; i < ntiles; ++i) {
    const auto& t = hw.gemm_tiles[i];
    const double row_tiles = std::ceil(rows / t.rows);
    double used = rows / (row_tiles * t.rows);
    double tiles = row_tiles;
    if (cols > 0) {
      const double col_tiles = std::ceil(cols / t.cols);
      used *= cols / (col_tiles * t.cols);
      tiles *= col_tiles;
      // Waves: fewer tiles than SMs leave SMs idle unless the reduction is split into slices
      // (split-K), at most as many as fill one wave. From one full wave on, the libraries'
      // stream-K / tile heuristics spread a partial last wave over all SMs, so it costs no idle
      // SMs here (pricing it would let a speedup rise with batch where the baseline's product
      // happens to end in a worse wave than the verification's).
      if (tiles < sms) {
        const double split = std::min(max_split, std::floor(sms / tiles));
        used *= tiles * split / sms;
      }
    }
    best = std::max(best, used * feed[i] / best_feed);
  }
  return best;
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
  const double rate = peak_flops_per_s * hw.compute_efficiency;
  double compute = op.flops / rate;
  if (op.gemm_rows > 0) compute /= gemm_efficiency(hw, op.gemm_rows, op.gemm_cols, op.gemm_depth, rate);
  const double memory = op.bytes / (hw.memory_bandwidth_bytes_per_s * hw.memory_efficiency);
  const double body = overlapped(compute, memory, hw.overlap_exponent);
  // Every kernel of the operator takes at least the floor (and, launched from the host, its launch).
  const double kernel_floor = hw.kernel_floor_s * op.kernels;
  const double launch = launch_floor_s * op.kernels;
  const double floor = std::max(kernel_floor, launch);
  if (bound)
    *bound = launch > std::max(body, kernel_floor) ? "launch"
             : kernel_floor > body                 ? "floor"
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
