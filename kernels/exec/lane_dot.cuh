#pragma once
// The contract's dot product (reference/model/ops.cpp, ops::dot: eight interleaved partial sums,
// each product accumulated by one fused multiply-add, then (((a0+a4)+(a1+a5))+((a2+a6)+(a3+a7)))
// + tail)
// spread over a group of eight adjacent lanes of a warp: lane l of the group owns partial sum
// a_l, so the group reads eight consecutive elements per step (a 32-byte sector of fp32), and a
// fixed shuffle tree (xor 4, then 1, then 2) performs exactly the reference's combine.
#include "reference/core/exact_math.hpp"

namespace specdec::kernels {

inline constexpr int kDotLanes = 8;

// ops::dot on one thread, the same operations in the same order.
SPECDEC_HD inline float dot_sequential(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] = exact::fma(a[i + l], b[i + l], acc[l]);
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail = exact::fma(a[i], b[i], tail);
  const float left = exact::add(exact::add(acc[0], acc[4]), exact::add(acc[1], acc[5]));
  const float right = exact::add(exact::add(acc[2], acc[6]), exact::add(acc[3], acc[7]));
  return exact::add(exact::add(left, right), tail);
}

// The combine of the eight partial sums of each lane group. Every lane of the warp must call it
// together; every lane of a group gets its group's value (addition commutes bitwise, so the
// partner's view of each pair is the same number).
template <class Ctx>
SPECDEC_HD inline float combine_lanes(const Ctx& ctx, float partial) {
  float s = exact::add(partial, ctx.shfl_xor(partial, 4));  // a_l + a_{l+4}
  s = exact::add(s, ctx.shfl_xor(s, 1));                    // (a0+a4) + (a1+a5), (a2+a6) + (a3+a7)
  return exact::add(s, ctx.shfl_xor(s, 2));                 // the two halves
}

}  // namespace specdec::kernels
