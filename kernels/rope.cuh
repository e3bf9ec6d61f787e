#pragma once
// Rotary embedding applied in place from host tables, bitwise Rope::apply (reference/model/rope.cpp):
// for each head and j < hd/2, (x_j, x_{j+hd/2}) -> (x_j·cos_j − x_{j+hd/2}·sin_j,
// x_{j+hd/2}·cos_j + x_j·sin_j). The cos/sin tables (one row of hd/2 per token) are computed on
// the host in double and rounded once, so no backend evaluates a transcendental here.
#include "kernels/exec/launch_shape.hpp"
#include "reference/core/exact_math.hpp"

namespace specdec::kernels {

struct RopeApply {
  float* x = nullptr;  // (T, ldx): heads of hd contiguous from the start of each row
  long long ldx = 0;
  const float* cos = nullptr;  // (T, hd/2)
  const float* sin = nullptr;  // (T, hd/2)
  int T = 0, heads = 0, hd = 0;

  LaunchShape shape() const { return {{T, heads, 1}, 64, 0}; }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const int t = ctx.block_x(), half = hd / 2;
    float* v = x + t * ldx + ctx.block_y() * hd;
    const float* c = cos + static_cast<long long>(t) * half;
    const float* s = sin + static_cast<long long>(t) * half;
    for (int j = ctx.thread(); j < half; j += ctx.block_dim()) {
      const float x1 = v[j], x2 = v[j + half];
      v[j] = exact::sub(exact::mul(x1, c[j]), exact::mul(x2, s[j]));
      v[j + half] = exact::add(exact::mul(x2, c[j]), exact::mul(x1, s[j]));
    }
  }
};

}  // namespace specdec::kernels
