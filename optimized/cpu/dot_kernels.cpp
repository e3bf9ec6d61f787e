#include "optimized/cpu/dot_kernels.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
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
        for (int l = 0; l < 8; ++l) acc[r][t][l] = std::fma(xt[l], w[l], acc[r][t][l]);
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TB; ++t) {
      float tail = 0.0f;
      for (int j = i; j < n; ++j) tail = std::fma(x[t * ldx + j], widen<D>(rows[r], j), tail);
      out[r * TB + t] = combine(acc[r][t], tail);
    }
  }
}

#ifdef SPECDEC_CPU_X86

template <Dtype D>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline __m256 load8(const void* row, int i) {
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

// Bytes of one stored element, and kernel chunks (8 elements) per 64-byte cache line.
template <Dtype D>
constexpr int kElementBytes = D == Dtype::F32 ? 4 : 2;
template <Dtype D>
constexpr int kChunksPerLine = 64 / (8 * kElementBytes<D>);

// The rows of the next tile that a pass prefetches: rows [first, last) of those at `rows`.
struct NextRows {
  const std::byte* rows;  // nullptr: none
  std::size_t stride;
  int first, last;
};

// acc[r][t] += x_t[i, i+8) · w_r[i, i+8), lane by lane (lane l is ops::dot's partial sum acc[l];
// one fused multiply-add, rounded once); row_at(r) is the first element of weight row r. The empty asm
// statements pin each loaded vector in a register: otherwise the compiler folds the loads into
// the multiplies (one load per multiply instead of one per vector) and the loads, not the
// arithmetic, set the pace.
template <Dtype D, int R, int TB, class RowAt>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void pass_chunk(const RowAt& row_at, const float* x,
                                                                            std::size_t ldx, int i,
                                                                            __m256 (&acc)[R][TB]) {
  __m256 wr[R];
  for (int r = 0; r < R; ++r) {
    __m256 v = load8<D>(row_at(r), i);
    if constexpr (TB > 1) __asm__("" : "+x"(v));
    wr[r] = v;
  }
  for (int t = 0; t < TB; ++t) {
    __m256 xt = _mm256_loadu_ps(x + t * ldx + i);
    if constexpr (R > 1) __asm__("" : "+x"(xt));
    for (int r = 0; r < R; ++r) acc[r][t] = _mm256_fmadd_ps(xt, wr[r], acc[r][t]);
  }
}

// out[r·ldo + t] = the combined partial sums of (row r, token t) plus the sequential tail over
// elements [n8, n).
template <Dtype D, int R, int TB, class RowAt>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline void finish_avx2(const __m256 (&acc)[R][TB],
                                                                             const RowAt& row_at, const float* x,
                                                                             std::size_t ldx, int n8, int n, float* out,
                                                                             int ldo) {
  alignas(32) float lanes[8];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < TB; ++t) {
      float tail = 0.0f;
      for (int j = n8; j < n; ++j) tail = std::fma(x[t * ldx + j], widen<D>(row_at(r), j), tail);
      _mm256_store_ps(lanes, acc[r][t]);
      out[r * ldo + t] = combine(lanes, tail);
    }
  }
}

// dot_block's AVX2 version: rows anywhere in memory (attention's visible keys).
template <Dtype D, int R, int TB>
__attribute__((target("avx2,fma,f16c"))) void kernel_avx2(const void* const* rows, const float* x, std::size_t ldx, int n,
                                                       float* out) {
  const auto row_at = [rows](int r) { return rows[r]; };
  __m256 acc[R][TB];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TB; ++t) acc[r][t] = _mm256_setzero_ps();
  const int n8 = n / 8 * 8;
  for (int i = 0; i < n8; i += 8) pass_chunk<D, R, TB>(row_at, x, ldx, i, acc);
  finish_avx2<D, R, TB>(acc, row_at, x, ldx, n8, n, out, TB);
}

// One pass over R rows for TB tokens, the R·TB partial sums in registers (R·TB ≤ 8):
// out[r·ldo + t] = x_t · w_r. While it reads the rows it prefetches the same byte offsets of the
// `next` rows, one line per row for every line it consumes, so the memory stream keeps pace with
// the compute instead of coming in bursts. Not inlined: each shape gets its own register
// allocation.
template <Dtype D, int R, int TB>
__attribute__((target("avx2,fma,f16c"), noinline)) void pass_avx2(const std::byte* w, std::size_t stride, const float* x,
                                                               std::size_t ldx, int n, float* out, int ldo,
                                                               NextRows next) {
  constexpr int E = kElementBytes<D>, L = kChunksPerLine<D>;
  const auto row_at = [w, stride](int r) { return w + r * stride; };
  __m256 acc[R][TB];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < TB; ++t) acc[r][t] = _mm256_setzero_ps();
  const int n8 = n / 8 * 8;
  const bool prefetch = next.rows != nullptr && next.first < next.last;
  // One chunk per iteration: unrolled, the compiler interleaves chunks and runs out of registers.
  for (int i = 0; i < n8; i += 8) {
    if (prefetch && i % (8 * L) == 0) {
      for (int r = next.first; r < next.last; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(next.rows + r * next.stride + static_cast<std::size_t>(i) * E),
                     _MM_HINT_T0);
    }
    pass_chunk<D, R, TB>(row_at, x, ldx, i, acc);
  }
  finish_avx2<D, R, TB>(acc, row_at, x, ldx, n8, n, out, ldo);
}

// A pass over RB ≤ 2 rows for 1 ≤ tb ≤ 4 tokens.
template <Dtype D, int RB>
__attribute__((target("avx2,fma,f16c"))) void pair_pass_avx2(int tb, const std::byte* w, std::size_t stride, const float* x,
                                                         std::size_t ldx, int n, float* out, int ldo, NextRows next) {
  switch (tb) {
    case 1: return pass_avx2<D, RB, 1>(w, stride, x, ldx, n, out, ldo, next);
    case 2: return pass_avx2<D, RB, 2>(w, stride, x, ldx, n, out, ldo, next);
    case 3: return pass_avx2<D, RB, 3>(w, stride, x, ldx, n, out, ldo, next);
    default: return pass_avx2<D, RB, 4>(w, stride, x, ldx, n, out, ldo, next);
  }
}

// R rows by T tokens.
// - T ≤ 2 (decode): one pass over all R rows straight from memory.
// - T > 2 (verify, prefill): passes of two rows by up to four tokens. A pair of rows comes from
//   memory in its first pass and from cache in the others (two BF16/F16 rows are widened once per
//   four tokens, where R = 4 rows by 2 tokens would widen every row once per two). Pass p of P
//   prefetches rows [p·R/P, (p+1)·R/P) of the next tile, so the next tile streams in evenly over
//   all the passes while this one computes.
// Every reduction runs over the chunks in order with its partial sums in registers: ops::dot,
// bit for bit.
template <Dtype D, int R>
__attribute__((target("avx2,fma,f16c"))) void tile_avx2(const std::byte* w, std::size_t stride, const float* x,
                                                     std::size_t ldx, int T, int n, float* out, const std::byte* next) {
  if (T == 1) return pass_avx2<D, R, 1>(w, stride, x, ldx, n, out, 1, {next, stride, 0, R});
  if (T == 2) return pass_avx2<D, R, 2>(w, stride, x, ldx, n, out, 2, {next, stride, 0, R});
  const int passes = (R + 1) / 2 * ((T + 3) / 4);
  int p = 0;
  for (int r0 = 0; r0 < R; r0 += 2) {
    for (int t0 = 0; t0 < T; t0 += 4, ++p) {
      const NextRows share{next, stride, p * R / passes, (p + 1) * R / passes};
      const int tb = std::min(4, T - t0);
      float* o = out + r0 * T + t0;
      if (r0 + 2 <= R) {
        pair_pass_avx2<D, 2>(tb, w + r0 * stride, stride, x + t0 * ldx, ldx, n, o, T, share);
      } else {
        pair_pass_avx2<D, 1>(tb, w + r0 * stride, stride, x + t0 * ldx, ldx, n, o, T, share);
      }
    }
  }
}

template <Dtype D>
__attribute__((target("avx2,fma,f16c"))) void widen_avx2(const void* src, int n, float* dst) {
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
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
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
