#pragma once
// IEEE 754 binary16 (float16) and bfloat16 <-> float32 conversion, as stored in checkpoints.
// Narrowing rounds to nearest, ties to even; NaN stays NaN (quieted, sign kept), infinities and
// subnormals are exact. Widening is always exact.
#include <bit>
#include <cstdint>

namespace specdec {

inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa · 2^-24, exact in float (at most 10 significant bits).
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // 2^-24
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  if (exponent == 0x1f) {
    // Infinity or NaN; the payload moves to the top of the float mantissa.
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  }
  // Normal: rebias the exponent from 15 to 127.
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

inline uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) {
    // NaN: keep the top payload bits and set the quiet bit so the result is never infinity.
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  }
  if (ax >= 0x477ff000u) {
    // >= 65520 (halfway between 65504, odd, and 2^16) rounds to infinity; also +-inf itself.
    return static_cast<uint16_t>(sign | 0x7c00u);
  }
  if (ax < 0x38800000u) {
    // Below 2^-14: the result is subnormal (or rounds up to the smallest normal). Adding 0.5
    // makes the float unit in the last place 2^-24, the half subnormal step, so the hardware
    // addition performs exactly the round-to-nearest-even we need.
    const float sum = std::bit_cast<float>(ax) + 0.5f;
    return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(sum) - 0x3f000000u));
  }
  // Normal: rebias the exponent (-112 << 23) and round the 13 dropped bits to nearest even; a
  // carry out of the mantissa correctly increments the exponent.
  const uint32_t odd = (ax >> 13) & 1u;
  ax += 0xc8000fffu + odd;
  return static_cast<uint16_t>(sign | (ax >> 13));
}

inline float bfloat16_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

inline uint16_t float_to_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    // NaN: truncate and set the quiet bit so that a payload only in the low bits survives.
    return static_cast<uint16_t>((x >> 16) | 0x0040u);
  }
  // Round to nearest even on the 16 dropped bits; overflow past the largest finite value
  // carries into the exponent and gives infinity, as it should.
  const uint32_t odd = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7fffu + odd) >> 16);
}

}  // namespace specdec
