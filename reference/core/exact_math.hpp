#pragma once
// The arithmetic of the exactness contract (docs/exactness.md), written once for the host and the
// GPU: every operation rounds to nearest even on its own (a fused multiply-add once, where the
// contract asks for one: in dot products), nothing is contracted or approximated, subnormals are
// kept. The reference, the cpu backend and the CUDA kernels all call these, so a
// value computed on any of them has the same bits.
//
// On the host, under the project's flags (-ffp-contract=off, no fast-math, SSE arithmetic), `a + b`
// already is the IEEE operation; on the device the explicit `__f*_rn` intrinsics make it so
// whatever nvcc's --fmad setting, and they keep ptxas from fusing a multiply into an add.
#include <cstdint>
#include <cstring>

#if defined(__CUDACC__)
#define SPECDEC_HD __host__ __device__
#else
#define SPECDEC_HD
#endif

namespace specdec::exact {

// Version of the contract; traces carry it and a trace of another version is refused.
inline constexpr const char* kContractVersion = "2";

SPECDEC_HD inline float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

SPECDEC_HD inline float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

SPECDEC_HD inline float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// a·b + c rounded once. On the device as inline PTX tagged "exact::fma", so the PTX lint tells
// it from a contraction the source did not ask for.
SPECDEC_HD inline float fma(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("fma.rn.f32 %0, %1, %2, %3; // exact::fma" : "=f"(r) : "f"(a), "f"(b), "f"(c));
  return r;
#else
  return __builtin_fmaf(a, b, c);
#endif
}

SPECDEC_HD inline float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

SPECDEC_HD inline float sqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return __builtin_sqrtf(a);  // IEEE sqrtss; errno is not set under the project's flags either way
#endif
}

SPECDEC_HD inline uint32_t bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

SPECDEC_HD inline float from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// 2^k as a float, for -126 <= k <= 127 (built from the exponent field: exact).
SPECDEC_HD inline float pow2i(int k) { return from_bits(static_cast<uint32_t>(k + 127) << 23); }

// e^x from IEEE-rounded adds and multiplies and integer operations only, so it gives the same bits
// on every backend (glibc's expf and CUDA's expf differ from each other and from correct
// rounding). Cody–Waite reduction x = n·ln2 + r with |r| <~ 0.35, a degree-7 polynomial for e^r,
// then a scaling by 2^n in two exact-or-once-rounded steps so subnormal results round once.
// Accuracy over every float input: see docs/exactness.md (measured by specdec_exp_accuracy).
// NaN gives NaN, +inf gives +inf, -inf and x < -103.98 give +0, x > 88.73 gives +inf.
SPECDEC_HD inline float exp(float x) {
  if (!(x == x)) return add(x, x);     // NaN in, (quiet) NaN out
  if (x > 88.7228394f) return from_bits(0x7f800000u);  // e^x > FLT_MAX
  if (x < -103.972084f) return 0.0f;   // e^x < half the smallest subnormal
  // n = round(x / ln2): adding 1.5·2^23 rounds to an integer in the last place (exact integer
  // arithmetic follows); n may be off by one from the true nearest, which r's range absorbs.
  const float shifter = 12582912.0f;
  const float t = add(mul(x, 1.44269502f), shifter);
  const float nf = sub(t, shifter);
  const int n = static_cast<int>(bits(t) - bits(shifter));
  // r = x − n·ln2 with ln2 split so n·ln2_hi is exact (ln2_hi has 16 significant bits, |n| <= 150)
  // and x − n·ln2_hi is exact (the operands are close).
  const float ln2_hi = 0.693145751953125f;
  const float ln2_lo = 1.42860677e-06f;
  const float r = sub(sub(x, mul(nf, ln2_hi)), mul(nf, ln2_lo));
  // e^r ≈ 1 + r + r²·P(r), Horner's rule in this order (coefficients of Taylor's series, which on
  // |r| <= 0.35 leave a truncation error below 2^-30).
  float p = 1.98412698e-04f;            // 1/5040
  p = add(mul(p, r), 1.38888889e-03f);  // 1/720
  p = add(mul(p, r), 8.33333377e-03f);  // 1/120
  p = add(mul(p, r), 4.16666679e-02f);  // 1/24
  p = add(mul(p, r), 1.66666672e-01f);  // 1/6
  p = add(mul(p, r), 0.5f);
  const float er = add(add(mul(mul(r, r), p), r), 1.0f);
  // 2^n = 2^a · 2^b with a, b in [-76, 65]: er·2^a is exact (no overflow or underflow), and the
  // second product rounds once, to a subnormal or to infinity where the result is one.
  const int a = n / 2;
  return mul(mul(er, pow2i(a)), pow2i(n - a));
}

// SiLU, x·σ(x), as x / (1 + e^(−x)) (negation is exact).
SPECDEC_HD inline float silu(float x) { return div(x, add(1.0f, exp(-x))); }

}  // namespace specdec::exact
