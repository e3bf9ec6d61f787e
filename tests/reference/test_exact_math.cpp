// The exactness contract's arithmetic (reference/core/exact_math.hpp): exp's special values and
// thresholds, subnormal results, a strided sweep against the correctly rounded value (within 1 ulp,
// monotone, and pinned bit for bit), silu, and the floating-point environment the contract
// assumes (no flush-to-zero, no denormals-are-zero, round to nearest).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <utility>
#include <vector>

#include "reference/core/exact_math.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace specdec {
namespace {

using exact::bits;
using exact::from_bits;

// The order of floats as integers: adjacent floats differ by 1, -0 and +0 are both 0.
int64_t ordered(float f) {
  const uint32_t u = bits(f);
  return (u & 0x80000000u) ? -static_cast<int64_t>(u & 0x7fffffffu) : static_cast<int64_t>(u);
}

int64_t ulps(float a, float b) { return std::llabs(ordered(a) - ordered(b)); }

// e^x correctly rounded to float, for all but a handful of inputs (a double result can round
// twice; those inputs are not at 1/2 ulp of a float, so this is what the contract measures against).
float exp_reference(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }

constexpr float kOverflowAt = 88.7228394f;    // smallest float whose e^x rounds to +inf
constexpr float kUnderflowAt = -103.972084f;  // largest float whose e^x rounds to +0

// Every 997th float bit pattern with x in [-104, 89] (97 of them per 2^16 patterns, spread over
// every exponent and both signs), sorted by value.
const std::vector<float>& sweep() {
  static const std::vector<float> xs = [] {
    std::vector<float> v;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 997) {
      const float x = from_bits(static_cast<uint32_t>(u));
      if (x >= -104.0f && x <= 89.0f) v.push_back(x);  // false for NaN
    }
    std::sort(v.begin(), v.end());
    return v;
  }();
  return xs;
}

TEST(ExactExp, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(exact::exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(exact::exp(-std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(exact::exp(from_bits(0x7fc12345u))));  // a NaN with a payload
  EXPECT_EQ(bits(exact::exp(inf)), bits(inf));
  EXPECT_EQ(bits(exact::exp(-inf)), 0u);  // +0, not -0
  // e^±0 = 1 exactly: the reduction gives n = 0 and r = ±0.
  EXPECT_EQ(bits(exact::exp(0.0f)), bits(1.0f));
  EXPECT_EQ(bits(exact::exp(-0.0f)), bits(1.0f));
  EXPECT_EQ(bits(exact::exp(std::numeric_limits<float>::denorm_min())), bits(1.0f));
  EXPECT_EQ(bits(exact::exp(-std::numeric_limits<float>::denorm_min())), bits(1.0f));
  EXPECT_EQ(bits(exact::exp(std::numeric_limits<float>::max())), bits(inf));
  EXPECT_EQ(bits(exact::exp(std::numeric_limits<float>::lowest())), 0u);
}

// The early returns must sit exactly where rounding the true value switches to inf and to 0: a
// threshold one float off either clips a finite result or computes one that overflows.
TEST(ExactExp, OverflowAndUnderflowThresholds) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_reference(kOverflowAt), inf);
  EXPECT_LT(exp_reference(std::nextafter(kOverflowAt, 0.0f)), inf);
  EXPECT_EQ(exp_reference(kUnderflowAt), 0.0f);
  EXPECT_GT(exp_reference(std::nextafter(kUnderflowAt, 0.0f)), 0.0f);

  float x = kOverflowAt;
  for (int i = 0; i < 8; ++i) x = std::nextafter(x, 0.0f);
  for (int i = 0; i < 16; ++i, x = std::nextafter(x, inf)) {
    EXPECT_EQ(std::isinf(exact::exp(x)), x >= kOverflowAt) << "x = " << x;
    EXPECT_LE(ulps(exact::exp(x), exp_reference(x)), 1) << "x = " << x;
  }
  EXPECT_EQ(bits(exact::exp(std::nextafter(kOverflowAt, 0.0f))), 0x7f7fff84u);  // FLT_MAX − 123 ulp

  x = kUnderflowAt;
  for (int i = 0; i < 8; ++i) x = std::nextafter(x, -inf);
  for (int i = 0; i < 16; ++i, x = std::nextafter(x, 0.0f)) {
    EXPECT_EQ(exact::exp(x) == 0.0f, x <= kUnderflowAt) << "x = " << x;
    EXPECT_FALSE(std::signbit(exact::exp(x))) << "x = " << x;
  }
  // Just above the threshold the result is the smallest subnormal, 2^-149.
  EXPECT_EQ(exact::exp(std::nextafter(kUnderflowAt, 0.0f)), std::numeric_limits<float>::denorm_min());
}

// Results below FLT_MIN (x < -87.34) are subnormals, rounded once: not flushed to zero, not
// rounded twice on the way down. Checked for every float input that has such a result.
TEST(ExactExp, ProducesSubnormalResults) {
  const float flt_min = std::numeric_limits<float>::min();
  EXPECT_EQ(std::fpclassify(exact::exp(-100.0f)), FP_SUBNORMAL);
  EXPECT_EQ(bits(exact::exp(-100.0f)), 0x1bu);  // 27 · 2^-149 = 3.78e-44
  int64_t subnormals = 0, exact_results = 0;
  for (float x = std::nextafter(kUnderflowAt, 0.0f); x < -87.0f; x = std::nextafter(x, 0.0f)) {
    const float e = exact::exp(x);
    const float r = exp_reference(x);
    ASSERT_LE(ulps(e, r), 1) << "x = " << x << ": " << e << " vs " << r;
    ASSERT_GT(e, 0.0f) << "x = " << x;
    if (e < flt_min) ++subnormals;
    if (e == r) ++exact_results;
  }
  EXPECT_GT(subnormals, 2'000'000);
  // 99.8% are correctly rounded; scaling down by 2^n in steps that each round gets 84%.
  EXPECT_GT(static_cast<double>(exact_results) / static_cast<double>(subnormals), 0.99);
}

TEST(ExactExp, SweepWithinOneUlpOfCorrectlyRounded) {
  const std::vector<float>& xs = sweep();
  ASSERT_GT(xs.size(), 2'000'000u);
  int64_t off = 0;
  float worst_x = 0;
  int64_t worst = 0;
  for (float x : xs) {
    const int64_t d = ulps(exact::exp(x), exp_reference(x));
    if (d > worst) {
      worst = d;
      worst_x = x;
    }
    off += d != 0;
  }
  EXPECT_LE(worst, 1) << "worst at x = " << worst_x << " (bits 0x" << std::hex << bits(worst_x) << ")";
  // Over every float in the range, 99.19% are correctly rounded; a weaker polynomial or a sloppier
  // reduction stays within 1 ulp at many points but rounds wrongly far more often.
  EXPECT_LT(static_cast<double>(off) / static_cast<double>(xs.size()), 0.01) << off << " of " << xs.size();
}

TEST(ExactExp, MonotoneOnTheSweep) {
  const std::vector<float>& xs = sweep();
  float previous = exact::exp(xs.front());
  for (std::size_t i = 1; i < xs.size(); ++i) {
    const float e = exact::exp(xs[i]);
    ASSERT_GE(e, previous) << "e^x decreases between x = " << xs[i - 1] << " and x = " << xs[i];
    previous = e;
  }
}

// The bits are the contract: the CUDA kernels reproduce them. Any change here (a new polynomial, a
// contracted multiply-add, another reduction) changes every trace: bump exact::kContractVersion and
// re-record the golden traces (scripts/record_golden.sh).
TEST(ExactExp, BitsArePinned) {
  const std::pair<float, uint32_t> pinned[] = {
      {1.0f, 0x402df854u},        {-1.0f, 0x3ebc5ab2u},       {0.5f, 0x3fd3094cu},
      {10.0f, 0x46ac14eeu},       {-10.0f, 0x383e6bceu},      {80.0f, 0x792abbceu},
      {0.34657359f, 0x3fb504f3u}, {-87.3365479f, 0x007fffe6u},
  };
  for (const auto& [x, expected] : pinned) {
    EXPECT_EQ(bits(exact::exp(x)), expected) << "x = " << x;
  }
  // FNV-1a 64 over the sweep's results, as little-endian float bits.
  uint64_t h = 14695981039346656037ull;
  for (float x : sweep()) {
    const uint32_t b = bits(exact::exp(x));
    for (int k = 0; k < 4; ++k) h = (h ^ ((b >> (8 * k)) & 0xffu)) * 1099511628211ull;
  }
  EXPECT_EQ(h, 0x3419b4b2dab983e0ull) << std::hex << "0x" << h;
}

TEST(ExactSilu, Values) {
  EXPECT_EQ(bits(exact::silu(0.0f)), bits(0.0f));
  EXPECT_EQ(bits(exact::silu(-0.0f)), bits(-0.0f));
  EXPECT_EQ(exact::silu(100.0f), 100.0f);  // e^-100 vanishes against 1
  EXPECT_EQ(exact::silu(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(exact::silu(std::numeric_limits<float>::quiet_NaN())));
  // x / (1 + e^-x): one exp (<= 1 ulp), one add and one division, each rounded once.
  for (float x : {1.0f, -1.0f, 0.5f, -0.5f, 3.0f, -3.0f, 20.0f, -20.0f, 1e-3f, -1e-3f, 60.0f, -60.0f}) {
    const double d = static_cast<double>(x);
    const auto expected = static_cast<float>(d / (1.0 + std::exp(-d)));
    EXPECT_LE(ulps(exact::silu(x), expected), 2) << "x = " << x << ": " << exact::silu(x) << " vs " << expected;
    EXPECT_EQ(std::signbit(exact::silu(x)), x < 0) << "x = " << x;
  }
}

// ---- the floating-point environment --------------------------------------------------------------

// Anything that turns on flush-to-zero or denormals-are-zero for the process (a library built with
// -ffast-math links crtfastmath.o, which does so at start-up) changes the contract's results.
TEST(FloatingPointEnvironment, IsIeeeDefault) {
  EXPECT_EQ(std::fegetround(), FE_TONEAREST);
#if defined(__x86_64__) || defined(__i386__)
  const unsigned csr = _mm_getcsr();
  EXPECT_EQ(csr & (1u << 15), 0u) << "MXCSR FTZ (flush to zero) is set: 0x" << std::hex << csr;
  EXPECT_EQ(csr & (1u << 6), 0u) << "MXCSR DAZ (denormals are zero) is set: 0x" << std::hex << csr;
  EXPECT_EQ(csr & (3u << 13), 0u) << "MXCSR rounding is not to nearest: 0x" << std::hex << csr;
#endif
}

TEST(FloatingPointEnvironment, SubnormalsSurviveMultiplication) {
  // volatile: the compiler would fold constants at compile time, in IEEE arithmetic, whatever the
  // run-time mode; these multiplications must run on the hardware.
  volatile float tiny = 1e-30f, small = 1e-10f, sub = std::numeric_limits<float>::denorm_min() * 1000.0f, one = 1.0f;
  const float product = exact::mul(tiny, small);  // 1e-40 < FLT_MIN: flushed under FTZ
  EXPECT_EQ(std::fpclassify(product), FP_SUBNORMAL) << product;
  EXPECT_EQ(bits(product), 0x000116c2u);  // 71362 · 2^-149
  const float kept = exact::mul(sub, one);  // a subnormal input: read as 0 under DAZ
  EXPECT_EQ(bits(kept), 1000u);
}

}  // namespace
}  // namespace specdec
