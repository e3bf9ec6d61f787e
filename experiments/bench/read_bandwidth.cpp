#include "experiments/bench/read_bandwidth.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "reference/core/error.hpp"
#include "reference/core/stream_buffer.hpp"

namespace specdec {

namespace {

std::size_t last_level_cache_bytes() {
  long llc = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  llc = ::sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (llc <= 0) llc = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  return llc > 0 ? static_cast<std::size_t>(llc) : 0;
}

// Thread t of n owns [begin, end) of a buffer of `count` floats (the same split every pass, so
// each thread reads the pages it touched first).
std::pair<std::size_t, std::size_t> share(std::size_t count, int t, int n) {
  const std::size_t per = count / static_cast<std::size_t>(n), extra = count % static_cast<std::size_t>(n);
  const std::size_t begin = static_cast<std::size_t>(t) * per + std::min<std::size_t>(static_cast<std::size_t>(t), extra);
  return {begin, begin + per + (static_cast<std::size_t>(t) < extra ? 1 : 0)};
}

// Sums data[b, e) the way the optimized decode reads its weights: several streams at once (four
// weight rows, and the next four prefetched) with software prefetch ahead of each. A single
// sequential stream gets 10-30% less out of the memory system on the development machine, which
// made the decode look faster than the "limit".
double stream_sum(const float* data, std::size_t b, std::size_t e) {
  constexpr int kStreams = 8;
  constexpr std::size_t kLine = 64 / sizeof(float);  // floats per cache line
  constexpr std::size_t kAhead = 16;                 // lines prefetched ahead in each stream
  const std::size_t per = (e - b) / kLine / kStreams;  // lines per stream
  float acc[kLine] = {};                               // element-wise sums: vectorised
  for (std::size_t l = 0; l < per; ++l) {
    for (int s = 0; s < kStreams; ++s) {
      const float* line = data + b + (static_cast<std::size_t>(s) * per + l) * kLine;
      __builtin_prefetch(line + kAhead * kLine);
      for (std::size_t j = 0; j < kLine; ++j) acc[j] += line[j];
    }
  }
  double total = 0;
  for (float a : acc) total += a;
  for (std::size_t i = b + kStreams * per * kLine; i < e; ++i) total += data[i];
  return total;
}

// This thread's number in the enclosing parallel region (0 without OpenMP).
int thread_index() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

}  // namespace

ReadBandwidth measure_read_bandwidth(int threads, std::size_t buffer_bytes, int passes) {
  if (threads < 0) throw Error("bandwidth: threads must be >= 0 (0 = the default)");
  if (passes < 1) throw Error("bandwidth: passes must be >= 1");
  if (buffer_bytes == 0) {
    // Twice the last-level cache defeats it for a streaming read (every pass evicts what the next
    // needs first); at least 256 MiB, at most 1 GiB and an eighth of the memory.
    std::size_t cap = std::size_t{1} << 30;
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) cap = std::min(cap, static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 8);
    buffer_bytes = std::max<std::size_t>(std::size_t{256} << 20, std::min(cap, 2 * last_level_cache_bytes()));
  }
  if (buffer_bytes < (std::size_t{1} << 20)) throw Error("bandwidth: the buffer must be at least 1 MiB");
  int n = 1;
#ifdef _OPENMP
  n = threads > 0 ? threads : omp_get_max_threads();
#endif
  const std::size_t count = buffer_bytes / sizeof(float);
  // The same kind of memory the optimized backend keeps its weights in (huge pages where offered).
  const StreamBuffer buffer = allocate_stream_buffer(count * sizeof(float));
  std::vector<double> partial(static_cast<std::size_t>(n), 0.0);
  auto* data = reinterpret_cast<float*>(buffer.get());
#pragma omp parallel num_threads(n)
  {
    const auto [b, e] = share(count, thread_index(), n);
    std::fill(data + b, data + e, 1.0f);  // first touch by the reading thread
  }
  ReadBandwidth r;
  r.threads = n;
  r.buffer_bytes = static_cast<double>(count * sizeof(float));
  r.passes = passes;
  for (int p = 0; p < passes; ++p) {
    const auto start = std::chrono::steady_clock::now();
#pragma omp parallel num_threads(n)
    {
      const int t = thread_index();
      const auto [b, e] = share(count, t, n);
      partial[static_cast<std::size_t>(t)] += stream_sum(data, b, e);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.bytes_per_s = std::max(r.bytes_per_s, r.buffer_bytes / seconds);
  }
  // Use the sums, so that no pass can be optimised away.
  double total = 0;
  for (double v : partial) total += v;
  if (!(total > 0)) throw Error("bandwidth: the streaming sum read back wrong values");
  return r;
}

}  // namespace specdec
