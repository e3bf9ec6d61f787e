#include "optimized/cpu/dot_kernels.hpp"

#include <array>
#include <atomic>
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
