#include "optimized/cpu/dot_kernels.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SPECDEC_CPU_X86 1
#endif

#include "reference/core/half.hpp"

namespace specdec::cpu {

namespace {

using Kernel = void (*)(const void* const* rows, const float* x, std::size_t ldx, int n, float* out);

// The fixed combine of ops::dot.
inline float combine(const float* a, float tail) {
  return (((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))) + tail;
}

template <Dtype D>
inline float widen(const void* row, int i) {
  if constexpr (D == Dtype::F32) {
    return static_cast<const float*>(row)[i];
  } else if constexpr (D == Dtype::BF16) {
    return bfloat16_to_float(static_cast<const uint16_t*>(row)[i]);
  } else {
    return half_to_float(static_cast<const uint16_t*>(row)[i]);
  }
}

// Portable version: the same operations as ops::dot, R·TB of them side by side.
template <Dtype D, int R, int TB>
void kernel_portable(const void* const* rows, const float* x, std::size_t ldx, int n, float* out) {
  float acc[R][TB][8] = {};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int r = 0; r < R; ++r) {
      float w[8];
      for (int l = 0; l < 8; ++l) w[l] = widen<D>(rows[r], i + l);
      for (int t = 0; t < TB; ++t) {
        const float* xt = x + t * ldx + i;
        for (int l = 0; l < 8; ++l) acc[r][t][l] += xt[l] * w[l];
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TB; ++t) {
      float tail = 0.0f;
      for (int j = i; j < n; ++j) tail += x[t * ldx + j] * widen<D>(rows[r], j);
      out[r * TB + t] = combine(acc[r][t], tail);
    }
  }
}

#ifdef SPECDEC_CPU_X86

template <Dtype D>
__attribute__((target("avx2,f16c"), always_inline)) inline __m256 load8(const void* row, int i) {
  if constexpr (D == Dtype::F32) {
    return _mm256_loadu_ps(static_cast<const float*>(row) + i);
  } else if constexpr (D == Dtype::BF16) {
    // bfloat16 is the top half of a float: zero-extend to 32 bits and shift into place (exact).
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    // vcvtph2ps widens exactly (NaN payloads aside, which only NaN weights could show).
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i));
    return _mm256_cvtph_ps(h);
  }
}

// AVX2 version: lane l of acc[r][t] is ops::dot's partial sum acc[l]; mul and add stay separate.
template <Dtype D, int R, int TB>
__attribute__((target("avx2,f16c"))) void kernel_avx2(const void* const* rows, const float* x, std::size_t ldx, int n,
                                                       float* out) {
  __m256 acc[R][TB];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TB; ++t) acc[r][t] = _mm256_setzero_ps();
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 w[R];
    for (int r = 0; r < R; ++r) w[r] = load8<D>(rows[r], i);
    for (int t = 0; t < TB; ++t) {
      const __m256 xt = _mm256_loadu_ps(x + t * ldx + i);
      for (int r = 0; r < R; ++r) acc[r][t] = _mm256_add_ps(acc[r][t], _mm256_mul_ps(xt, w[r]));
    }
  }
  alignas(32) float lanes[8];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TB; ++t) {
      float tail = 0.0f;
      for (int j = i; j < n; ++j) tail += x[t * ldx + j] * widen<D>(rows[r], j);
      _mm256_store_ps(lanes, acc[r][t]);
      out[r * TB + t] = combine(lanes, tail);
    }
  }
}

// Bytes of one stored element, and kernel chunks (8 elements) per 64-byte cache line.
template <Dtype D>
constexpr int kElementBytes = D == Dtype::F32 ? 4 : 2;
template <Dtype D>
constexpr int kChunksPerLine = 64 / (8 * kElementBytes<D>);

template <int R>
__attribute__((always_inline)) inline void prefetch_lines(const std::byte* next, std::size_t stride, std::size_t offset) {
  for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(next + r * stride + offset), _MM_HINT_T0);
}

// acc[r][t] += x_t[i, i+8) · w_r[i, i+8), lane by lane.
template <Dtype D, int R, int TB>
__attribute__((target("avx2,f16c"), always_inline)) inline void stream_chunk(const std::byte* w, std::size_t stride,
                                                                              const float* x, std::size_t ldx, int i,
                                                                              __m256 (&acc)[R][TB]) {
  __m256 wr[R];
  for (int r = 0; r < R; ++r) wr[r] = load8<D>(w + r * stride, i);
  for (int t = 0; t < TB; ++t) {
    const __m256 xt = _mm256_loadu_ps(x + t * ldx + i);
    for (int r = 0; r < R; ++r) acc[r][t] = _mm256_add_ps(acc[r][t], _mm256_mul_ps(xt, wr[r]));
  }
}

// One pass over R rows for TB ≤ 2 tokens, accumulators in registers; while it streams the rows,
// the same lines of the next R rows are prefetched (one line per row per line consumed).
template <Dtype D, int R, int TB>
__attribute__((target("avx2,f16c"))) void tile_stream_avx2(const std::byte* w, std::size_t stride, const float* x,
                                                            std::size_t ldx, int n, float* out, const std::byte* next) {
  constexpr int E = kElementBytes<D>, L = kChunksPerLine<D>;
  __m256 acc[R][TB];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TB; ++t) acc[r][t] = _mm256_setzero_ps();
  const int n8 = n / 8 * 8;
  int i = 0;
  if (next != nullptr) {
    for (; i + 8 * L <= n8; i += 8 * L) {
      prefetch_lines<R>(next, stride, static_cast<std::size_t>(i) * E);
      for (int c = 0; c < L; ++c) stream_chunk<D, R, TB>(w, stride, x, ldx, i + 8 * c, acc);
    }
  }
  for (; i < n8; i += 8) stream_chunk<D, R, TB>(w, stride, x, ldx, i, acc);
  alignas(32) float lanes[8];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TB; ++t) {
      float tail = 0.0f;
      for (int j = n8; j < n; ++j) tail += x[t * ldx + j] * widen<D>(w + r * stride, j);
      _mm256_store_ps(lanes, acc[r][t]);
      out[r * TB + t] = combine(lanes, tail);
    }
  }
}

// Elements of the inner dimension per slice for T tokens: the tokens' activation slices (T·slice
// floats) and the widened weight slice stay in L1 together. A multiple of 32, so slices start on
// cache lines of every stored precision.
inline int slice_elements(int T) { return std::clamp(4096 / T / 32 * 32, 64, kMaxSlice); }

// The lines of the next rows' slice, prefetched one at a time, evenly spread over the chunk steps
// of every pass over the current slice (Bresenham-style). Evenly, because a burst fills the
// core's miss buffers and stalls the compute behind it, and then leaves memory idle.
struct PrefetchQueue {
  const char* lines[kMaxBlockRows * kMaxSlice * 4 / 64];
  int size = 0, done = 0, steps = 1, credit = 0;

  // Queues the lines of bytes [begin, end) of R rows starting at `rows` (stride bytes apart),
  // to be issued over `total_steps` chunk steps.
  void reset(const std::byte* rows, int R, std::size_t stride, std::size_t begin, std::size_t end, int total_steps) {
    size = done = credit = 0;
    steps = total_steps;
    if (rows == nullptr) return;
    for (int r = 0; r < R; ++r)
      for (std::size_t b = begin; b < end; b += 64) lines[size++] = reinterpret_cast<const char*>(rows + r * stride + b);
  }
};

// acc[r][t0 + t] += x_t · w_r over chunks [k0, k1), t < TB: the partial sums are loaded from
// `acc`, carried in registers and stored back. Each chunk is one step of the prefetch queue; its
// counters live in registers for the pass (through memory they would chain every chunk to the
// last by a store-to-load round trip).
template <int R, int TB>
__attribute__((target("avx2,f16c"), always_inline)) inline void slice_pass_avx2(
    const float* const* wr, const float* x, std::size_t ldx, int k0, int k1, float (*acc)[kMaxTileTokens][8], int t0,
    PrefetchQueue& queue) {
  __m256 a[R][TB];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TB; ++t) a[r][t] = _mm256_load_ps(acc[r][t0 + t]);
  const int size = queue.size, steps = queue.steps;
  int credit = queue.credit, done = queue.done;
  for (int i = k0; i < k1; i += 8) {
    credit += size;
    if (credit >= steps) {
      credit -= steps;
      if (done < size) _mm_prefetch(queue.lines[done++], _MM_HINT_T0);
    }
    __m256 wv[R];
    for (int r = 0; r < R; ++r) wv[r] = _mm256_loadu_ps(wr[r] + i);
    for (int t = 0; t < TB; ++t) {
      const __m256 xt = _mm256_loadu_ps(x + t * ldx + i);
      for (int r = 0; r < R; ++r) a[r][t] = _mm256_add_ps(a[r][t], _mm256_mul_ps(xt, wv[r]));
    }
  }
  queue.credit = credit;
  queue.done = done;
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TB; ++t) _mm256_store_ps(acc[r][t0 + t], a[r][t]);
}

// R rows by 2 < T ≤ kMaxTileTokens tokens, slice by slice of the inner dimension: each weight
// slice is widened once into L1 (BF16/F16) and serves every token from there, two tokens at a
// time. The partial sums of every (row, token) carry across slices, so each reduction still runs
// over the chunks in order: the result is ops::dot's, bit for bit. The same slice of the next
// rows is prefetched meanwhile.
template <Dtype D, int R>
__attribute__((target("avx2,f16c"))) void tile_sliced_avx2(const std::byte* w, std::size_t stride, const float* x,
                                                            std::size_t ldx, int T, int n, float* out,
                                                            const std::byte* next) {
  constexpr int E = kElementBytes<D>;
  alignas(32) float acc[R][kMaxTileTokens][8];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) _mm256_store_ps(acc[r][t], _mm256_setzero_ps());
  alignas(32) float wide[D == Dtype::F32 ? 1 : R][kMaxSlice];
  const int n8 = n / 8 * 8, slice = slice_elements(T), passes = (T + 1) / 2;
  PrefetchQueue prefetch;
  for (int k0 = 0; k0 < n8; k0 += slice) {
    const int k1 = std::min(n8, k0 + slice);
    prefetch.reset(next, R, stride, static_cast<std::size_t>(k0) * E, static_cast<std::size_t>(k1) * E,
                   passes * ((k1 - k0) / 8));
    const float* wr[R];  // the slice of row r is wr[r][k0, k1)
    if constexpr (D == Dtype::F32) {
      for (int r = 0; r < R; ++r) wr[r] = reinterpret_cast<const float*>(w + r * stride);
    } else {
      for (int r = 0; r < R; ++r) {
        for (int i = k0; i < k1; i += 8) _mm256_store_ps(wide[r] + (i - k0), load8<D>(w + r * stride, i));
        wr[r] = wide[r] - k0;
      }
    }
    int t0 = 0;
    for (; t0 + 2 <= T; t0 += 2) slice_pass_avx2<R, 2>(wr, x + t0 * ldx, ldx, k0, k1, acc, t0, prefetch);
    if (t0 < T) slice_pass_avx2<R, 1>(wr, x + t0 * ldx, ldx, k0, k1, acc, t0, prefetch);
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float tail = 0.0f;
      for (int j = n8; j < n; ++j) tail += x[t * ldx + j] * widen<D>(w + r * stride, j);
      out[r * T + t] = combine(acc[r][t], tail);
    }
  }
}

template <Dtype D, int R>
__attribute__((target("avx2,f16c"))) void tile_avx2(const std::byte* w, std::size_t stride, const float* x,
                                                     std::size_t ldx, int T, int n, float* out, const std::byte* next) {
  if (T == 1) return tile_stream_avx2<D, R, 1>(w, stride, x, ldx, n, out, next);
  if (T == 2) return tile_stream_avx2<D, R, 2>(w, stride, x, ldx, n, out, next);
  tile_sliced_avx2<D, R>(w, stride, x, ldx, T, n, out, next);
}

template <Dtype D>
__attribute__((target("avx2,f16c"))) void widen_avx2(const void* src, int n, float* dst) {
  int i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, load8<D>(src, i));
  for (; i < n; ++i) dst[i] = widen<D>(src, i);
}

#endif  // SPECDEC_CPU_X86

template <Dtype D>
void widen_portable(const void* src, int n, float* dst) {
  for (int i = 0; i < n; ++i) dst[i] = widen<D>(src, i);
}

constexpr int dtype_index(Dtype d) { return d == Dtype::F32 ? 0 : d == Dtype::BF16 ? 1 : 2; }
constexpr Dtype kDtypes[3] = {Dtype::F32, Dtype::BF16, Dtype::F16};

// Portable tile: the same dot products, kMaxBlockTokens tokens at a time.
template <Dtype D, int R>
void tile_portable(const std::byte* w, std::size_t stride, const float* x, std::size_t ldx, int T, int n, float* out,
                   const std::byte*) {
  const void* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = w + r * stride;
  float block[R * kMaxBlockTokens];
  for (int t0 = 0; t0 < T; t0 += kMaxBlockTokens) {
    const int TB = std::min(kMaxBlockTokens, T - t0);
    const float* xt = x + t0 * ldx;
    switch (TB) {
      case 1: kernel_portable<D, R, 1>(rows, xt, ldx, n, block); break;
      case 2: kernel_portable<D, R, 2>(rows, xt, ldx, n, block); break;
      case 3: kernel_portable<D, R, 3>(rows, xt, ldx, n, block); break;
      default: kernel_portable<D, R, 4>(rows, xt, ldx, n, block); break;
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < TB; ++t) out[r * T + t0 + t] = block[r * TB + t];
  }
}

using TileKernel = void (*)(const std::byte*, std::size_t, const float*, std::size_t, int, int, float*, const std::byte*);
using TileTable = std::array<std::array<TileKernel, kMaxBlockRows>, 3>;

template <bool Simd, int DI, int R>
constexpr TileKernel pick_tile() {
#ifdef SPECDEC_CPU_X86
  if constexpr (Simd) return &tile_avx2<kDtypes[DI], R>;
#endif
  return &tile_portable<kDtypes[DI], R>;
}

template <bool Simd, int DI, int... Rs>
constexpr std::array<TileKernel, kMaxBlockRows> tile_row(std::integer_sequence<int, Rs...>) {
  return {pick_tile<Simd, DI, Rs + 1>()...};
}

template <bool Simd>
constexpr TileTable make_tile_table() {
  constexpr auto rs = std::make_integer_sequence<int, kMaxBlockRows>();
  return {tile_row<Simd, 0>(rs), tile_row<Simd, 1>(rs), tile_row<Simd, 2>(rs)};
}

using Table = std::array<std::array<std::array<Kernel, kMaxBlockTokens>, kMaxBlockRows>, 3>;

template <bool Simd, int DI, int R, int TB>
constexpr Kernel pick() {
#ifdef SPECDEC_CPU_X86
  if constexpr (Simd) return &kernel_avx2<kDtypes[DI], R, TB>;
#endif
  return &kernel_portable<kDtypes[DI], R, TB>;
}

template <bool Simd, int DI, int R, int... TBs>
constexpr std::array<Kernel, kMaxBlockTokens> token_row(std::integer_sequence<int, TBs...>) {
  return {pick<Simd, DI, R, TBs + 1>()...};
}

template <bool Simd, int DI, int... Rs>
constexpr std::array<std::array<Kernel, kMaxBlockTokens>, kMaxBlockRows> dtype_table(std::integer_sequence<int, Rs...>) {
  return {token_row<Simd, DI, Rs + 1>(std::make_integer_sequence<int, kMaxBlockTokens>())...};
}

template <bool Simd>
constexpr Table make_table() {
  constexpr auto rs = std::make_integer_sequence<int, kMaxBlockRows>();
  return {dtype_table<Simd, 0>(rs), dtype_table<Simd, 1>(rs), dtype_table<Simd, 2>(rs)};
}

constexpr Table kPortable = make_table<false>();
constexpr Table kSimd = make_table<true>();
constexpr TileTable kPortableTile = make_tile_table<false>();
constexpr TileTable kSimdTile = make_tile_table<true>();

bool detect_simd() {
#ifdef SPECDEC_CPU_X86
  __builtin_cpu_init();  // may run before the CPU model is initialised (static initialisation)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
#else
  return false;
#endif
}

const bool g_simd_available = detect_simd();
std::atomic<bool> g_simd_enabled{g_simd_available};

}  // namespace

void dot_block(Dtype dtype, const void* const* rows, int R, const float* x, std::size_t ldx, int TB, int n, float* out) {
  const Table& table = g_simd_enabled.load(std::memory_order_relaxed) ? kSimd : kPortable;
  table[dtype_index(dtype)][R - 1][TB - 1](rows, x, ldx, n, out);
}

void dot_tile(Dtype dtype, const void* w, std::size_t stride, int R, const float* x, std::size_t ldx, int T, int n,
              float* out, const void* next) {
  const TileTable& table = g_simd_enabled.load(std::memory_order_relaxed) ? kSimdTile : kPortableTile;
  table[dtype_index(dtype)][R - 1](static_cast<const std::byte*>(w), stride, x, ldx, T, n, out,
                                   static_cast<const std::byte*>(next));
}

void widen(Dtype dtype, const void* src, int n, float* dst) {
  const bool simd = g_simd_enabled.load(std::memory_order_relaxed);
  switch (dtype) {
    case Dtype::BF16:
#ifdef SPECDEC_CPU_X86
      if (simd) return widen_avx2<Dtype::BF16>(src, n, dst);
#endif
      return widen_portable<Dtype::BF16>(src, n, dst);
    case Dtype::F16:
#ifdef SPECDEC_CPU_X86
      if (simd) return widen_avx2<Dtype::F16>(src, n, dst);
#endif
      return widen_portable<Dtype::F16>(src, n, dst);
    default:
      return widen_portable<Dtype::F32>(src, n, dst);
  }
}

float dot(const float* a, const float* b, int n) {
  const void* rows[1] = {b};
  float out;
  dot_block(Dtype::F32, rows, 1, a, 0, 1, n, &out);
  return out;
}

bool simd_available() { return g_simd_available; }
bool simd_enabled() { return g_simd_enabled.load(); }
void set_simd_enabled(bool enabled) { g_simd_enabled.store(enabled && g_simd_available); }

}  // namespace specdec::cpu
