#pragma once
// This machine's achievable memory read bandwidth, measured the way a bandwidth-bound decode
// streams its weights: a vectorised sum over one buffer much larger than the last-level cache,
// split statically over the worker threads, each thread reading its share as eight streams
// with software prefetch (as the optimized decode reads four rows and prefetches the next
// four), best of several passes.
#include <cstddef>

namespace specdec {

struct ReadBandwidth {
  double bytes_per_s = 0;    // best pass
  int threads = 1;
  double buffer_bytes = 0;
  int passes = 0;
};

// `threads` 0 = the OpenMP default; `buffer_bytes` 0 = twice the last-level cache, at least
// 256 MiB, at most 1 GiB (and an eighth of the physical memory).
// Throws specdec::Error for threads < 0, passes < 1 or a buffer under 1 MiB.
ReadBandwidth measure_read_bandwidth(int threads = 0, std::size_t buffer_bytes = 0, int passes = 5);

}  // namespace specdec
