// float16 / bfloat16 conversion: exhaustive over all 16-bit patterns, every rounding boundary, and
// random floats against an independent nearest-value search.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "reference/core/half.hpp"

namespace specdec {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

// The value of a half bit pattern computed from the IEEE definition in double.
double half_value_reference(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  if (exponent == 0x1f) return mantissa ? std::numeric_limits<double>::quiet_NaN() : sign * INFINITY;
  if (exponent == 0) return sign * std::ldexp(mantissa, -24);
  return sign * std::ldexp(1024 + mantissa, exponent - 25);
}

TEST(Half, EveryPatternWidensToItsIeeeValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    const double expected = half_value_reference(static_cast<uint16_t>(h));
    if (std::isnan(expected)) {
      ASSERT_TRUE(std::isnan(f)) << "pattern 0x" << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << "pattern 0x" << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), expected) << "pattern 0x" << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000) != 0) << "pattern 0x" << std::hex << h;  // -0 too
    }
  }
}

TEST(Half, EveryNonNanPatternRoundTripsExactly) {
  int nan_patterns = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = half_to_float(static_cast<uint16_t>(h));
    const uint16_t back = float_to_half(f);
    if (std::isnan(f)) {
      ++nan_patterns;
      // NaN stays NaN with its sign (never collapses to infinity).
      ASSERT_EQ(back & 0x7c00, 0x7c00) << "pattern 0x" << std::hex << h;
      ASSERT_NE(back & 0x3ff, 0) << "pattern 0x" << std::hex << h;
      ASSERT_EQ(back & 0x8000, h & 0x8000) << "pattern 0x" << std::hex << h;
    } else {
      ASSERT_EQ(back, h) << "pattern 0x" << std::hex << h;
    }
  }
  EXPECT_EQ(nan_patterns, 2 * 1023);
}

// Between two adjacent halves a < b: the midpoint goes to the one with an even mantissa, and the
// floats just below / above the midpoint go to a / b. Covers subnormals and the normal range.
TEST(Half, EveryRoundingBoundaryRoundsToNearestEven) {
  for (uint16_t sign : {uint16_t{0}, uint16_t{0x8000}}) {
    for (uint32_t h = 0; h < 0x7bff; ++h) {
      const uint16_t lo = static_cast<uint16_t>(sign | h), hi = static_cast<uint16_t>(sign | (h + 1));
      const float a = half_to_float(lo), b = half_to_float(hi);
      const float mid = (a + b) / 2;  // exact: at most 12 significant bits
      ASSERT_EQ(static_cast<double>(mid), (half_value_reference(lo) + half_value_reference(hi)) / 2);
      const uint16_t even = (h & 1) ? hi : lo;
      ASSERT_EQ(float_to_half(mid), even) << "midpoint above pattern 0x" << std::hex << lo;
      ASSERT_EQ(float_to_half(std::nextafter(mid, a)), lo) << "just below midpoint above 0x" << std::hex << lo;
      ASSERT_EQ(float_to_half(std::nextafter(mid, b)), hi) << "just above midpoint above 0x" << std::hex << lo;
    }
  }
}

TEST(Half, OverflowAndUnderflow) {
  // 65504 is the largest half; 65520 is halfway to 2^16 and rounds (to even) to infinity.
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(std::nextafter(65520.0f, 0.0f)), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(-65520.0f), 0xfc00);
  EXPECT_EQ(float_to_half(1e10f), 0x7c00);
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::max()), 0x7c00);
  EXPECT_EQ(float_to_half(INFINITY), 0x7c00);
  EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
  // Half the smallest subnormal (2^-25) ties to even = 0; anything above rounds up to 2^-24.
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half(-std::ldexp(1.0f, -26)), 0x8000);  // sign of zero kept
  EXPECT_EQ(float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_half(-std::numeric_limits<float>::min()), 0x8000);
  // A NaN whose payload sits only in bits the half drops must still be NaN.
  const uint16_t n = float_to_half(std::bit_cast<float>(0x7f800001u));
  EXPECT_EQ(n & 0x7c00, 0x7c00);
  EXPECT_NE(n & 0x3ff, 0);
}

// Independent reference: search the sorted table of all finite non-negative halves.
uint16_t nearest_half_reference(float f, const std::vector<double>& table) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double x = std::fabs(static_cast<double>(f));
  if (x >= 65520.0) return sign | 0x7c00;
  const auto it = std::lower_bound(table.begin(), table.end(), x);
  const std::size_t hi = static_cast<std::size_t>(it - table.begin());
  if (hi == table.size()) return static_cast<uint16_t>(sign | 0x7bff);  // (65504, 65520)
  if (hi == 0 || table[hi] == x) return static_cast<uint16_t>(sign | hi);
  const std::size_t lo = hi - 1;
  const double dlo = x - table[lo], dhi = table[hi] - x;
  if (dlo < dhi) return static_cast<uint16_t>(sign | lo);
  if (dhi < dlo) return static_cast<uint16_t>(sign | hi);
  return static_cast<uint16_t>(sign | ((lo & 1) ? hi : lo));
}

TEST(Half, RandomFloatsMatchNearestValueSearch) {
  std::vector<double> table;
  for (uint32_t h = 0; h <= 0x7bff; ++h) table.push_back(half_value_reference(static_cast<uint16_t>(h)));
  const uint64_t seed = 20240611;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 1000000; ++i) {
    // Random bit patterns restricted to the half range and just beyond (exponents 90..143).
    const uint32_t exponent = 90 + static_cast<uint32_t>(rng() % 54);
    const uint32_t pattern = static_cast<uint32_t>(rng() & 0x807fffffu) | (exponent << 23);
    const float f = std::bit_cast<float>(pattern);
    ASSERT_EQ(float_to_half(f), nearest_half_reference(f, table))
        << "seed " << seed << " case " << i << " float bits 0x" << std::hex << pattern;
  }
}

TEST(BFloat16, EveryNonNanPatternRoundTripsExactly) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const float f = bfloat16_to_float(static_cast<uint16_t>(b));
    ASSERT_EQ(bits(f), b << 16) << "pattern 0x" << std::hex << b;
    const uint16_t back = float_to_bfloat16(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(bfloat16_to_float(back))) << "pattern 0x" << std::hex << b;
      ASSERT_EQ(back & 0x8000, b & 0x8000) << "pattern 0x" << std::hex << b;
    } else {
      ASSERT_EQ(back, b) << "pattern 0x" << std::hex << b;
    }
  }
}

TEST(BFloat16, EveryRoundingBoundaryRoundsToNearestEven) {
  for (uint32_t sign : {0u, 0x8000u}) {
    for (uint32_t b = 0; b < 0x7f7f; ++b) {
      const uint16_t lo = static_cast<uint16_t>(sign | b), hi = static_cast<uint16_t>(sign | (b + 1));
      const float a = bfloat16_to_float(lo), c = bfloat16_to_float(hi);
      const float mid = std::bit_cast<float>((static_cast<uint32_t>(lo) << 16) | 0x8000u);  // exact midpoint
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(a) + c) / 2) << "pattern 0x" << std::hex << lo;
      ASSERT_EQ(float_to_bfloat16(mid), (b & 1) ? hi : lo) << "midpoint above pattern 0x" << std::hex << lo;
      ASSERT_EQ(float_to_bfloat16(std::nextafter(mid, a)), lo) << "below midpoint above 0x" << std::hex << lo;
      ASSERT_EQ(float_to_bfloat16(std::nextafter(mid, c)), hi) << "above midpoint above 0x" << std::hex << lo;
    }
  }
}

TEST(BFloat16, OverflowAndNan) {
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // above the last midpoint
  EXPECT_EQ(float_to_bfloat16(std::bit_cast<float>(0x7f7f7fffu)), 0x7f7f);
  EXPECT_EQ(float_to_bfloat16(-INFINITY), 0xff80);
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  // NaN with a payload only in the dropped low bits must not become infinity.
  const uint16_t n = float_to_bfloat16(std::bit_cast<float>(0xff800001u));
  EXPECT_TRUE(std::isnan(bfloat16_to_float(n)));
  EXPECT_EQ(n & 0x8000, 0x8000);
}

}  // namespace
}  // namespace specdec
