#pragma once
// Weights as stored (F32, BF16 or F16), widened to fp32 exactly where a kernel reads them, so a
// BF16 matrix streams two bytes per weight and still gives the reference's bits (the reference
// holds the same values rounded to the precision, in fp32).
#include <cstdint>

#include "reference/core/exact_math.hpp"

namespace specdec::kernels {

enum class WeightType : int { kF32 = 0, kBF16 = 1, kF16 = 2 };

SPECDEC_HD inline float bf16_to_f32(uint16_t b) { return exact::from_bits(static_cast<uint32_t>(b) << 16); }

// The same conversion as reference/core/half.hpp: on the device the hardware's widening (exact,
// subnormals included); on the host integer operations and one exact multiply.
SPECDEC_HD inline float f16_to_f32(uint16_t h) {
#if defined(__CUDA_ARCH__)
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
#else
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa · 2^-24
    const float magnitude = exact::mul(static_cast<float>(mantissa), 5.9604644775390625e-8f);
    return exact::from_bits(sign | exact::bits(magnitude));
  }
  if (exponent == 0x1f) return exact::from_bits(sign | 0x7f800000u | (mantissa << 13));
  return exact::from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
#endif
}

// Element i of a row of stored weights.
template <WeightType W>
SPECDEC_HD inline float load_weight(const void* row, long long i) {
  if constexpr (W == WeightType::kF32) {
    return static_cast<const float*>(row)[i];
  } else if constexpr (W == WeightType::kBF16) {
    return bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
  } else {
    return f16_to_f32(static_cast<const uint16_t*>(row)[i]);
  }
}

template <WeightType W>
inline constexpr int kWeightBytes = W == WeightType::kF32 ? 4 : 2;

}  // namespace specdec::kernels
