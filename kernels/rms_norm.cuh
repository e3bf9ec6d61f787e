#pragma once
// RMSNorm per row, bitwise ops::rms_norm_inplace (reference/model/ops.cpp):
//   y = w ⊙ (x · (1 / sqrt(dot(x, x) / n + eps)))
// One warp per row: each of its four lane groups computes the contract's dot product (reading the
// row from L1 after the first), so every lane holds the scale without a broadcast; then the warp
// writes the row. In place (y == x) is safe: the shuffles order every read of x for the sum before any write, and
// each lane then reads only the elements it writes.
#include "kernels/exec/lane_dot.cuh"
#include "kernels/exec/launch_shape.hpp"

namespace specdec::kernels {

struct RmsNorm {
  const float* x = nullptr;  // (rows, n), row stride ldx
  long long ldx = 0;
  const float* w = nullptr;  // (n)
  float* y = nullptr;        // (rows, n), row stride ldy; may be x
  long long ldy = 0;
  int rows = 0, n = 0;
  float eps = 0.0f;  // the model's epsilon rounded to float, as the reference adds it

  LaunchShape shape() const { return {{rows, 1, 1}, kWarpSize, 0}; }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const float* xr = x + ctx.block_x() * ldx;
    float* yr = y + ctx.block_x() * ldy;
    const int lane = ctx.lane() % kDotLanes;
    float acc = 0.0f;
    for (int i = lane; i + (kDotLanes - lane) <= n; i += kDotLanes) acc = exact::fma(xr[i], xr[i], acc);
    // The tail is read before the shuffles too: after them a lane may already be writing y = x.
    float tail = 0.0f;
    for (int i = n / kDotLanes * kDotLanes; i < n; ++i) tail = exact::fma(xr[i], xr[i], tail);
    const float sum = exact::add(combine_lanes(ctx, acc), tail);
    const float mean_sq = exact::div(sum, static_cast<float>(n));
    const float scale = exact::div(1.0f, exact::sqrt(exact::add(mean_sq, eps)));
    for (int i = ctx.lane(); i < n; i += kWarpSize) yr[i] = exact::mul(w[i], exact::mul(xr[i], scale));
  }
};

}  // namespace specdec::kernels
