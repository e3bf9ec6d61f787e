// The AVX2 path (AVX2 + FMA + F16C): one ymm register is ops::dot's eight partial sums, and
// vfmadd rounds each lane once as std::fma does, so every kernel here is bitwise the portable one.
#include <algorithm>

#include "optimized/cpu/dot_kernels_paths.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SPECDEC_CPU_X86 1
#endif

namespace specdec::cpu::paths {

#ifdef SPECDEC_CPU_X86

namespace {

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
      _mm256_store_ps(lanes, acc[r][t]);
      out[r * ldo + t] = combine(lanes, tail_dot<D>(x + t * ldx, row_at(r), n8, n));
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
                     _MM_HINT_T1);
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
//   prefetches rows [p·R/P, (p+1)·R/P) of the `next` tile, so the next tile streams in evenly over
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
  for (; i < n; ++i) dst[i] = widen_one<D>(src, i);
}

// weighted_sum on eight lanes: a separate multiply and add per element (never fused), as the
// reference; four registers of sums at a time.
__attribute__((target("avx2,fma,f16c"))) void weighted_sum_avx2(const float* p, std::size_t ldp, int G,
                                                              const float* const* rows, int n, int m,
                                                              const float* scale, float* out, std::size_t ldo) {
  for (int h = 0; h < G; ++h) {
    const float* ph = p + h * ldp;
    float* o = out + h * ldo;
    const __m256 s = _mm256_set1_ps(scale[h]);
    int d = 0;
    for (; d + 32 <= m; d += 32) {
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int j = 0; j < n; ++j) {
        const __m256 pj = _mm256_set1_ps(ph[j]);
        const float* v = rows[j] + d;
        a0 = _mm256_add_ps(a0, _mm256_mul_ps(pj, _mm256_loadu_ps(v)));
        a1 = _mm256_add_ps(a1, _mm256_mul_ps(pj, _mm256_loadu_ps(v + 8)));
        a2 = _mm256_add_ps(a2, _mm256_mul_ps(pj, _mm256_loadu_ps(v + 16)));
        a3 = _mm256_add_ps(a3, _mm256_mul_ps(pj, _mm256_loadu_ps(v + 24)));
      }
      _mm256_storeu_ps(o + d, _mm256_mul_ps(a0, s));
      _mm256_storeu_ps(o + d + 8, _mm256_mul_ps(a1, s));
      _mm256_storeu_ps(o + d + 16, _mm256_mul_ps(a2, s));
      _mm256_storeu_ps(o + d + 24, _mm256_mul_ps(a3, s));
    }
    for (; d + 8 <= m; d += 8) {
      __m256 a = _mm256_setzero_ps();
      for (int j = 0; j < n; ++j) a = _mm256_add_ps(a, _mm256_mul_ps(_mm256_set1_ps(ph[j]), _mm256_loadu_ps(rows[j] + d)));
      _mm256_storeu_ps(o + d, _mm256_mul_ps(a, s));
    }
    for (; d < m; ++d) {
      float a = 0.0f;
      for (int j = 0; j < n; ++j) a += ph[j] * rows[j][d];
      o[d] = a * scale[h];
    }
  }
}

struct Avx2 {
  template <Dtype D, int R, int TB>
  static void block(const void* const* rows, const float* x, std::size_t ldx, int n, float* out) {
    kernel_avx2<D, R, TB>(rows, x, ldx, n, out);
  }
  template <Dtype D, int R>
  static void tile(const std::byte* w, std::size_t stride, const float* x, std::size_t ldx, int T, int n, float* out,
                   const std::byte* next) {
    tile_avx2<D, R>(w, stride, x, ldx, T, n, out, next);
  }
  template <Dtype D>
  static void widen(const void* src, int n, float* dst) {
    if constexpr (D == Dtype::F32) {
      std::copy(static_cast<const float*>(src), static_cast<const float*>(src) + n, dst);
    } else {
      widen_avx2<D>(src, n, dst);
    }
  }
};

}  // namespace

const KernelTable& avx2_kernels() {
  static constexpr KernelTable table{make_block_table<Avx2>(), make_tile_table<Avx2>(), make_widen_table<Avx2>(),
                                     &weighted_sum_avx2};
  return table;
}

#else

const KernelTable& avx2_kernels() { return portable_kernels(); }  // never chosen: isa_supported(avx2) is false

#endif  // SPECDEC_CPU_X86

}  // namespace specdec::cpu::paths
