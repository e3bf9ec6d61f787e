// The vector exp gives exact::exp's bits on every lane, on each kernel path: a sweep over float bit patterns (every
// sign, exponent and a spread of mantissas, specials and both thresholds included), with and
// without a shift, at lengths that leave a scalar tail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "optimized/cpu/vector_exp.hpp"
#include "reference/core/exact_math.hpp"
#include "tests/optimized/cpu_fixtures.hpp"

namespace specdec::cpu {
namespace {

std::vector<float> sweep() {
  std::vector<float> x;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 4099) {
    const uint32_t b = static_cast<uint32_t>(u);
    float f;
    std::memcpy(&f, &b, sizeof f);
    x.push_back(f);
  }
  for (const float f : {0.0f, -0.0f, 1.0f, -1.0f, 88.7228394f, std::nextafter(88.7228394f, 100.0f), -103.972084f,
                        std::nextafter(-103.972084f, -200.0f), -87.5f, -100.0f, 5.96046448e-08f,
                        std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()})
    x.push_back(f);
  return x;
}

class VectorExp : public testing::KernelPathTest {};
SPECDEC_INSTANTIATE_KERNEL_PATHS(VectorExp);

TEST_P(VectorExp, EqualsTheScalarExactExpBitwise) {
  const std::vector<float> x = sweep();
  for (const float shift : {0.0f, 3.25f, -80.0f}) {
    std::vector<float> got(x.size());
    exp_shifted(x.data(), shift, static_cast<int>(x.size()) - 3, got.data());  // leaves a scalar tail
    for (std::size_t i = 0; i + 3 < x.size(); ++i) {
      const float want = exact::exp(x[i] - shift);
      ASSERT_EQ(std::memcmp(&got[i], &want, sizeof want), 0)
          << path() << ", x " << x[i] << " shift " << shift << ": vector " << got[i] << ", scalar " << want << " (index " << i << ")";
    }
  }
}

}  // namespace
}  // namespace specdec::cpu
