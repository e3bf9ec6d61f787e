#pragma once
// Tree-masked, grouped-query attention over a KV cache of any length, bitwise the reference's
// `attend` (reference/model/attention.hpp) for every query row and head:
//   s_j = dot(q, k_j)·scale for the visible slots j (mask, sliding window), m = max s_j,
//   e_j = exp(s_j − m), sum = Σ e_j and o = (Σ e_j·v_j)·(1/sum), both sums in slot order.
// One block per (query row, head). Scores: the block's threads take slots in turn, each dot
// product on one thread in the contract's order; the max is order-free (NaN never wins, and which
// zero wins does not change any e_j). The sums run in slot order on the threads that own an output
// element, reading the e_j the block left in `scratch`.
#include <cstdint>
#include <string>

#include "kernels/exec/lane_dot.cuh"
#include "kernels/exec/launch_shape.hpp"
#include "reference/core/error.hpp"

namespace specdec::kernels {

struct Attention {
  const float* q = nullptr;  // (T, ldq): heads of hd contiguous
  long long ldq = 0;
  const float* k = nullptr;  // (slots, ldkv): KV heads of hd contiguous
  const float* v = nullptr;  // (slots, ldkv)
  long long ldkv = 0;
  const uint8_t* mask = nullptr;     // (T, cols): nonzero where row t may see slot j
  const int32_t* q_pos = nullptr;    // (T) positions of the query rows
  const int32_t* slot_pos = nullptr; // (cols) positions of the slots (read only with a window)
  int window = 0;                    // sliding window, 0 = none: slot j is hidden when q_pos − pos_j >= window
  float* out = nullptr;              // (T, ldo)
  long long ldo = 0;
  float* scratch = nullptr;          // (T·heads, cols): scores, then e_j
  int T = 0, heads = 0, kv_heads = 0, hd = 0, cols = 0;
  float scale = 0.0f;

  // Threads per block (a multiple of 32): a launch parameter that changes no bit, since the max is
  // order-free and every sum runs in slot order on one thread.
  static constexpr int kThreads = 128;
  int threads = kThreads;
  LaunchShape shape() const {
    if (threads < kWarpSize || threads > 1024 || threads % kWarpSize != 0)
      throw Error("Attention kernel: " + std::to_string(threads) + " threads per block; expected a multiple of 32 up to 1024");
    return {{T, heads, 1}, threads, (threads / kWarpSize) * sizeof(float)};
  }

  SPECDEC_HD bool visible(int t, int j) const {
    if (!mask[static_cast<long long>(t) * cols + j]) return false;
    return !(window > 0 && q_pos[t] - slot_pos[j] >= window);
  }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const int t = ctx.block_x(), h = ctx.block_y();
    const int g = h / (heads / kv_heads);  // grouped-query attention: heads share KV head g
    const float* qh = q + t * ldq + h * hd;
    float* s = scratch + (static_cast<long long>(t) * heads + h) * cols;

    float m = exact::from_bits(0xff800000u);  // -inf
    for (int j = ctx.thread(); j < cols; j += ctx.block_dim()) {
      if (!visible(t, j)) continue;
      const float sj = exact::mul(dot_sequential(qh, k + j * ldkv + g * hd, hd), scale);
      s[j] = sj;
      if (sj > m) m = sj;
    }
    for (int off = kWarpSize / 2; off > 0; off /= 2) {
      const float o = ctx.shfl_xor(m, off);
      if (o > m) m = o;
    }
    float* warp_max = ctx.template shared<float>();
    if (ctx.lane() == 0) warp_max[ctx.thread() / kWarpSize] = m;
    ctx.sync();
    for (int w = 0; w < ctx.block_dim() / kWarpSize; ++w)
      if (warp_max[w] > m) m = warp_max[w];
    for (int j = ctx.thread(); j < cols; j += ctx.block_dim())
      if (visible(t, j)) s[j] = exact::exp(exact::sub(s[j], m));
    ctx.sync();

    for (int d = ctx.thread(); d < hd; d += ctx.block_dim()) {
      float sum = 0.0f, o = 0.0f;
      int n = 0;
      for (int j = 0; j < cols; ++j) {
        if (!visible(t, j)) continue;
        sum = exact::add(sum, s[j]);
        o = exact::add(o, exact::mul(s[j], v[j * ldkv + g * hd + d]));
        ++n;
      }
      const float inv = n == 0 ? 0.0f : exact::div(1.0f, sum);
      out[t * ldo + h * hd + d] = exact::mul(o, inv);
    }
  }
};

}  // namespace specdec::kernels
