// The AVX-512 path (F/BW/VL, on top of AVX2 + FMA + F16C). A zmm register carries two tokens'
// eight partial sums side by side: the weight chunk is broadcast to both 256-bit halves and each
// half is multiplied by its own token's chunk, so lane l of each half accumulates exactly
// ops::dot's partial sum l, one fused multiply-add per chunk, in chunk order: bitwise the
// portable kernels. With 32 registers a pass holds four rows by eight tokens (16 accumulators),
// so a verify forward of up to eight tokens reads each weight from memory once, in one pass.
// Decode (one or two tokens) gains nothing from wider registers (it waits on memory) and runs the
// AVX2 path's pass; dot_block (attention's scores) does too.
#include <algorithm>

#include "optimized/cpu/dot_kernels_paths.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SPECDEC_CPU_X86 1
// GCC 12's avx512fintrin.h passes an undefined vector as the unused merge source of unmasked
// broadcasts and inserts, which -Wmaybe-uninitialized reports once per instantiation.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace specdec::cpu::paths {

#ifdef SPECDEC_CPU_X86

namespace {

#define SPECDEC_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx2,fma,f16c"

constexpr int kPairsPerPass = 4;  // a pass: up to four rows by four token pairs

// The eight elements of `row` at i, widened to fp32 exactly, in both 256-bit halves.
template <Dtype D>
__attribute__((target(SPECDEC_AVX512_TARGET), always_inline)) inline __m512 load8_twice(const void* row, int i) {
  if constexpr (D == Dtype::F32) {
    const auto* p = reinterpret_cast<const double*>(static_cast<const float*>(row) + i);
    return _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_loadu_pd(p)));
  } else {
    const __m256i h = _mm256_broadcastsi128_si256(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + i)));
    if constexpr (D == Dtype::BF16) {
      // bfloat16 is the top half of a float: zero-extend to 32 bits and shift into place.
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    } else {
      return _mm512_cvtph_ps(h);
    }
  }
}

// Tokens a (low half) and b (high half), elements [i, i+8).
__attribute__((target(SPECDEC_AVX512_TARGET), always_inline)) inline __m512 load_pair(const float* a, const float* b,
                                                                                      int i) {
  const __m256d lo = _mm256_loadu_pd(reinterpret_cast<const double*>(a + i));
  const __m256d hi = _mm256_loadu_pd(reinterpret_cast<const double*>(b + i));
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_zextpd256_pd512(lo), hi, 1));
}

// One pass over R rows for tb ≤ 2P tokens, token pair p = (2p, 2p+1) in acc[r][p] (an odd last
// token fills both halves; the high half is dropped): out[r·ldo + t] = x_t · w_r. While it reads
// the rows it prefetches the same byte offsets of the `next` rows, one line per row for each line
// it consumes. The empty asm statements pin each loaded vector in a register (see the AVX2 path).
template <Dtype D, int R, int P>
__attribute__((target(SPECDEC_AVX512_TARGET), noinline)) void pass_avx512(const std::byte* w, std::size_t stride,
                                                                         const float* x, std::size_t ldx, int tb,
                                                                         int n, float* out, int ldo, NextRows next) {
  constexpr int E = kElementBytes<D>, L = kChunksPerLine<D>;
  const float* xa[P];
  const float* xb[P];
  for (int p = 0; p < P; ++p) {
    xa[p] = x + static_cast<std::size_t>(2 * p) * ldx;
    xb[p] = x + static_cast<std::size_t>(std::min(2 * p + 1, tb - 1)) * ldx;
  }
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  const int n8 = n / 8 * 8;
  const bool prefetch = next.rows != nullptr && next.first < next.last;
  for (int i = 0; i < n8; i += 8) {
    if (prefetch && i % (8 * L) == 0) {
      for (int r = next.first; r < next.last; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(next.rows + r * next.stride + static_cast<std::size_t>(i) * E),
                     _MM_HINT_T1);
    }
    __m512 wr[R];
    for (int r = 0; r < R; ++r) {
      __m512 v = load8_twice<D>(w + r * stride, i);
      __asm__("" : "+v"(v));
      wr[r] = v;
    }
    for (int p = 0; p < P; ++p) {
      __m512 xp = load_pair(xa[p], xb[p], i);
      if constexpr (R > 1) __asm__("" : "+v"(xp));
      for (int r = 0; r < R; ++r) acc[r][p] = _mm512_fmadd_ps(xp, wr[r], acc[r][p]);
    }
  }
  alignas(64) float lanes[16];
  for (int r = 0; r < R; ++r) {
    const std::byte* row = w + r * stride;
    for (int p = 0; p < P; ++p) {
      _mm512_store_ps(lanes, acc[r][p]);
      out[r * ldo + 2 * p] = combine(lanes, tail_dot<D>(xa[p], row, n8, n));
      if (2 * p + 1 < tb) out[r * ldo + 2 * p + 1] = combine(lanes + 8, tail_dot<D>(xb[p], row, n8, n));
    }
  }
}

// weighted_sum on sixteen lanes (a separate multiply and add per element, as the reference), four
// registers of sums at a time; the last partial register is masked.
__attribute__((target(SPECDEC_AVX512_TARGET))) void weighted_sum_avx512(const float* p, std::size_t ldp, int G,
                                                                       const float* const* rows, int n, int m,
                                                                       const float* scale, float* out,
                                                                       std::size_t ldo) {
  for (int h = 0; h < G; ++h) {
    const float* ph = p + h * ldp;
    float* o = out + h * ldo;
    const __m512 s = _mm512_set1_ps(scale[h]);
    int d = 0;
    for (; d + 64 <= m; d += 64) {
      __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int j = 0; j < n; ++j) {
        const __m512 pj = _mm512_set1_ps(ph[j]);
        const float* v = rows[j] + d;
        a0 = _mm512_add_ps(a0, _mm512_mul_ps(pj, _mm512_loadu_ps(v)));
        a1 = _mm512_add_ps(a1, _mm512_mul_ps(pj, _mm512_loadu_ps(v + 16)));
        a2 = _mm512_add_ps(a2, _mm512_mul_ps(pj, _mm512_loadu_ps(v + 32)));
        a3 = _mm512_add_ps(a3, _mm512_mul_ps(pj, _mm512_loadu_ps(v + 48)));
      }
      _mm512_storeu_ps(o + d, _mm512_mul_ps(a0, s));
      _mm512_storeu_ps(o + d + 16, _mm512_mul_ps(a1, s));
      _mm512_storeu_ps(o + d + 32, _mm512_mul_ps(a2, s));
      _mm512_storeu_ps(o + d + 48, _mm512_mul_ps(a3, s));
    }
    for (; d < m; d += 16) {
      const __mmask16 k = m - d >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (m - d)) - 1u);
      __m512 a = _mm512_setzero_ps();
      for (int j = 0; j < n; ++j)
        a = _mm512_add_ps(a, _mm512_mul_ps(_mm512_set1_ps(ph[j]), _mm512_maskz_loadu_ps(k, rows[j] + d)));
      _mm512_mask_storeu_ps(o + d, k, _mm512_mul_ps(a, s));
    }
  }
}

struct Avx512 {
  // R rows by T tokens. T ≤ 2: the AVX2 path's decode pass. T > 2: passes of R rows by up to
  // eight tokens; the rows come from memory in the first pass and from cache in the others, and
  // pass q of Q prefetches rows [q·R/Q, (q+1)·R/Q) of the `next` tile.
  template <Dtype D, int R>
  static void tile(const std::byte* w, std::size_t stride, const float* x, std::size_t ldx, int T, int n, float* out,
                   const std::byte* next) {
    if (T <= 2) return avx2_kernels().tile[dtype_index(D)][R - 1](w, stride, x, ldx, T, n, out, next);
    constexpr int kTokensPerPass = 2 * kPairsPerPass;
    const int passes = (T + kTokensPerPass - 1) / kTokensPerPass;
    for (int q = 0; q < passes; ++q) {
      const int t0 = q * kTokensPerPass, tb = std::min(kTokensPerPass, T - t0);
      const NextRows share{next, stride, q * R / passes, (q + 1) * R / passes};
      const float* xt = x + static_cast<std::size_t>(t0) * ldx;
      switch ((tb + 1) / 2) {
        case 1: pass_avx512<D, R, 1>(w, stride, xt, ldx, tb, n, out + t0, T, share); break;
        case 2: pass_avx512<D, R, 2>(w, stride, xt, ldx, tb, n, out + t0, T, share); break;
        case 3: pass_avx512<D, R, 3>(w, stride, xt, ldx, tb, n, out + t0, T, share); break;
        default: pass_avx512<D, R, 4>(w, stride, xt, ldx, tb, n, out + t0, T, share); break;
      }
    }
  }
};

}  // namespace

const KernelTable& avx512_kernels() {
  static const KernelTable table{avx2_kernels().block, make_tile_table<Avx512>(), avx2_kernels().widen,
                                 &weighted_sum_avx512};
  return table;
}

#else

const KernelTable& avx512_kernels() { return portable_kernels(); }  // never chosen: isa_supported(avx512) is false

#endif  // SPECDEC_CPU_X86

}  // namespace specdec::cpu::paths
