#pragma once
// index[r] = the lowest index of row r's largest logit, as the reference's greedy choice
// (argmax in reference/sampling/sampler.cpp: strict >, ties keep the lower index). Each thread
// scans a strided slice in index order; thread 0 then combines the slices in thread order.
// "Larger value, else lower index" is associative and commutative, so any split gives the
// scan's answer. NaN never wins: first_nan[r] is the lowest NaN's index (n if none), and
// index[r] is -1 when no logit exceeds -inf, for the host to refuse as the reference does. Only
// comparisons: no rounding anywhere. One block per row.
#include <cstdint>
#include <string>

#include "kernels/exec/launch_shape.hpp"
#include "reference/core/error.hpp"
#include "reference/core/exact_math.hpp"

namespace specdec::kernels {

struct RowArgmax {
  const float* x = nullptr;  // (rows, n), row stride ldx
  long long ldx = 0;
  int rows = 0, n = 0;
  int32_t* index = nullptr;      // (rows)
  int32_t* first_nan = nullptr;  // (rows)
  int threads = 256;             // per block: a launch parameter, never a result bit

  LaunchShape shape() const {
    if (threads < 1 || threads > 1024)
      throw Error("RowArgmax kernel: " + std::to_string(threads) + " threads per block; expected 1 to 1024");
    return {{rows, 1, 1}, threads, static_cast<std::size_t>(threads) * 3 * 4};
  }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const float* xr = x + ctx.block_x() * ldx;
    const int t = ctx.thread(), nt = ctx.block_dim();
    float best = exact::from_bits(0xff800000u);  // -inf
    int at = n, nan = n;
    for (int i = t; i < n; i += nt) {
      const float v = xr[i];
      if (v != v) {
        if (i < nan) nan = i;
      } else if (v > best) {
        best = v, at = i;
      }
    }
    float* values = ctx.template shared<float>();
    int32_t* indices = reinterpret_cast<int32_t*>(values + nt);
    int32_t* nans = indices + nt;
    values[t] = best, indices[t] = at, nans[t] = nan;
    ctx.sync();
    if (t != 0) return;
    for (int k = 1; k < nt; ++k) {
      if (values[k] > best || (values[k] == best && indices[k] < at)) best = values[k], at = indices[k];
      if (nans[k] < nan) nan = nans[k];
    }
    index[ctx.block_x()] = at == n ? -1 : at;
    first_nan[ctx.block_x()] = nan;
  }
};

}  // namespace specdec::kernels
