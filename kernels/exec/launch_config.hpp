#pragma once
// Launch parameters the host picks per device: threads per block of the linear kernels and of
// attention. They are derived from the device's limits and never change a result bit (each
// output's reduction order is fixed by the exactness contract, not by the block it runs in), so
// the same model gives the same bits on an H200, an RTX 3090 and the CPU grid emulator.
#include <string>

namespace specdec::kernels {

// What a device offers (cudaDeviceProp's names in brackets).
struct DeviceLimits {
  int sm_count = 1;                  // [multiProcessorCount]
  int max_threads_per_sm = 2048;     // [maxThreadsPerMultiProcessor]
  int max_blocks_per_sm = 32;        // [maxBlocksPerMultiProcessor]
  int max_threads_per_block = 1024;  // [maxThreadsPerBlock]
  long long shared_bytes_per_block = 48 * 1024;  // [sharedMemPerBlock]
  // The most threads per block every linear (attention) kernel takes as compiled for the device:
  // the registers a kernel needs can cap it below max_threads_per_block (BF16 Linear on sm_90)
  // [cudaFuncAttributes::maxThreadsPerBlock, the least over the kernels of the kind].
  int max_linear_threads = 1024;
  int max_attention_threads = 1024;
};

struct LaunchConfig {
  int linear_threads = 128;     // Linear, GateUpSwiglu: a power of two, 64..1024
  int attention_threads = 128;  // Attention: a multiple of 32 up to 1024
};

// The smallest block (64, 128 or 256 threads) that can still fill an SM at full occupancy
// (threads × max_blocks_per_sm ≥ max_threads_per_sm): the most blocks, so a decode step's
// matrices spread evenly over the SMs (H200: 132 SMs of 32 blocks × 64 threads → 64). Attention
// gets at least four warps, so a long context's slots spread over 128 threads; both within the
// per-block thread and shared-memory limits.
inline LaunchConfig derive_launch_config(const DeviceLimits& d) {
  LaunchConfig c;
  c.linear_threads = 256;
  for (int t : {64, 128, 256}) {
    if (static_cast<long long>(t) * d.max_blocks_per_sm >= d.max_threads_per_sm) {
      c.linear_threads = t;
      break;
    }
  }
  c.attention_threads = c.linear_threads < 128 ? 128 : c.linear_threads;
  const int attention_cap = d.max_threads_per_block < d.max_attention_threads ? d.max_threads_per_block : d.max_attention_threads;
  while (c.attention_threads > 32 && (c.attention_threads > attention_cap ||
                                      static_cast<long long>(c.attention_threads / 32) * 4 > d.shared_bytes_per_block))
    c.attention_threads /= 2;
  const int linear_cap = d.max_threads_per_block < d.max_linear_threads ? d.max_threads_per_block : d.max_linear_threads;
  while (c.linear_threads > 64 && c.linear_threads > linear_cap) c.linear_threads /= 2;
  return c;
}

// The most threads per block the device's kernels take: the largest power of two for the linear
// kernels, the largest multiple of 32 for attention (the far end of what a launch may use).
inline LaunchConfig largest_launch_config(const DeviceLimits& d) {
  LaunchConfig c;
  const int linear_cap = d.max_threads_per_block < d.max_linear_threads ? d.max_threads_per_block : d.max_linear_threads;
  c.linear_threads = 64;
  while (c.linear_threads * 2 <= linear_cap && c.linear_threads < 1024) c.linear_threads *= 2;
  int attention_cap = d.max_threads_per_block < d.max_attention_threads ? d.max_threads_per_block : d.max_attention_threads;
  if (attention_cap > 1024) attention_cap = 1024;
  const long long by_shared = d.shared_bytes_per_block / 4 * 32;  // 4 bytes of shared memory a warp
  if (attention_cap > by_shared) attention_cap = static_cast<int>(by_shared);
  c.attention_threads = attention_cap < 32 ? 32 : attention_cap / 32 * 32;
  return c;
}

inline std::string describe(const LaunchConfig& c) {
  return "linear " + std::to_string(c.linear_threads) + " threads/block, attention " + std::to_string(c.attention_threads);
}

}  // namespace specdec::kernels
