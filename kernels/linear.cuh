#pragma once
// y = x · Wᵀ + b over T <= 64 tokens, bitwise ops::linear (reference/model/ops.cpp), with W stored
// F32, BF16 or F16. Two forms the cpu backend fuses too:
//   Linear<W>        up to three matrices that share the input (q/k/v in one launch), each into
//                    its own output;
//   GateUpSwiglu<W>  act = silu(x·Gᵀ + bg) ⊙ (x·Uᵀ + bu), gate and up rows read side by side.
//
// Shape on the GPU: a group of eight lanes per (output row, up to eight tokens); lane l owns the
// contract's partial sum a_l, so a group reads eight consecutive weights per step (32 bytes of
// fp32, 16 of BF16/F16) and every weight element is loaded once for all the group's tokens. The
// groups of up to eight token slices of one row sit in the same block, so a weight row comes from
// DRAM once for all T tokens and from L1 for the other slices. Loads of kUnroll steps are issued
// before their adds, so each thread keeps that many loads in flight. TPG, the tokens one group
// serves, sizes the accumulators: 1 for a one-token forward (few registers, many threads per SM),
// 8 for up to 64 tokens (kernels/README.md lists the registers of each).
#include <cstdint>
#include <string>

#include "kernels/exec/lane_dot.cuh"
#include "kernels/exec/launch_shape.hpp"
#include "kernels/exec/weights.cuh"
#include "reference/core/error.hpp"

namespace specdec::kernels {

inline constexpr int kLinearThreads = 128;  // threads per block unless the launch says otherwise
inline constexpr int kMaxTokenSlices = 8;
inline constexpr int kTokensPerGroup = 8;
inline constexpr int kLinearMaxTokens = kMaxTokenSlices * kTokensPerGroup;  // 64

// Token slices per output row (1, 2, 4 or 8) and output rows per block of `threads`, for T tokens.
// Which block holds a row changes no bit: each row's sum stays within its own lane group.
template <int TPG>
SPECDEC_HD inline int linear_token_slices(int T) {
  const int s = (T + TPG - 1) / TPG;
  return s <= 1 ? 1 : s <= 2 ? 2 : s <= 4 ? 4 : 8;
}
template <int TPG>
SPECDEC_HD inline int linear_rows_per_block(int T, int threads) {
  return threads / kDotLanes / linear_token_slices<TPG>(T);
}

// Where one lane group works: its output row (among `rows` in all), its first token and count.
struct LaneGroup {
  long long row;
  int lane, t0, nt;
};

template <int TPG, class Ctx>
SPECDEC_HD inline LaneGroup lane_group(const Ctx& ctx, int T, long long rows) {
  const int slices = linear_token_slices<TPG>(T);
  const int group = ctx.thread() / kDotLanes;
  LaneGroup g;
  g.lane = ctx.thread() % kDotLanes;
  g.row = static_cast<long long>(ctx.block_x()) * linear_rows_per_block<TPG>(T, ctx.block_dim()) + group / slices;
  g.t0 = (group % slices) * TPG;
  const int left = T - g.t0;
  g.nt = g.row < rows ? (left < 0 ? 0 : left < TPG ? left : TPG) : 0;
  return g;
}

// Host side: the shapes these kernels take. `threads` must give every token slice of a row its
// lane groups (64, 128, 256, 512 or 1024).
inline void check_linear_shape(const char* kernel, int tpg, int T, int in, int threads) {
  if (T < 1 || T > kMaxTokenSlices * tpg || in < 0)
    throw Error(std::string(kernel) + " kernel: " + std::to_string(T) + " tokens of " + std::to_string(in) +
                " inputs; this form takes 1 to " + std::to_string(kMaxTokenSlices * tpg) + " tokens");
  if (threads < kDotLanes * kMaxTokenSlices || threads > 1024 || threads % (kDotLanes * kMaxTokenSlices) != 0 ||
      (threads & (threads - 1)) != 0)
    throw Error(std::string(kernel) + " kernel: " + std::to_string(threads) +
                " threads per block; expected a power of two from 64 to 1024");
}

template <WeightType W>
SPECDEC_HD inline const void* weight_row(const void* w, long long row, int in) {
  return static_cast<const unsigned char*>(w) + row * in * kWeightBytes<W>;
}

// acc[k] = fma(x_k[i + lane], w[i + lane], acc[k]) for every full step of eight elements, k < nt: lane
// `lane`'s partial sum of ops::dot for nt token rows of x (stride ldx).
template <WeightType W, int TPG>
SPECDEC_HD inline void accumulate_row(const void* w, const float* x, long long ldx, int in, int lane, int nt,
                                      float (&acc)[TPG]) {
  constexpr int kUnroll = TPG == 1 ? 16 : 4;
  const int steps = in / kDotLanes;
  int s = 0;
  for (; s + kUnroll <= steps; s += kUnroll) {
    float wv[kUnroll];
    for (int u = 0; u < kUnroll; ++u) wv[u] = load_weight<W>(w, (s + u) * kDotLanes + lane);
    for (int u = 0; u < kUnroll; ++u) {
      const int i = (s + u) * kDotLanes + lane;
      for (int k = 0; k < TPG; ++k)
        if (k < nt) acc[k] = exact::fma(x[k * ldx + i], wv[u], acc[k]);
    }
  }
  for (; s < steps; ++s) {
    const int i = s * kDotLanes + lane;
    const float wv = load_weight<W>(w, i);
    for (int k = 0; k < TPG; ++k)
      if (k < nt) acc[k] = exact::fma(x[k * ldx + i], wv, acc[k]);
  }
}

// The sequential tail of ops::dot: fused multiply-adds over the last in mod 8 elements.
template <WeightType W>
SPECDEC_HD inline float row_tail(const void* w, const float* x, int in) {
  float tail = 0.0f;
  for (int i = in / kDotLanes * kDotLanes; i < in; ++i) tail = exact::fma(x[i], load_weight<W>(w, i), tail);
  return tail;
}

// One matrix of a Linear launch: w (rows, in) stored as W; bias (rows) or null; y (T, rows) with
// row stride ldy.
struct LinearOutput {
  const void* w = nullptr;
  const float* bias = nullptr;
  float* y = nullptr;
  int rows = 0;
  long long ldy = 0;
};

template <WeightType W, int TPG = kTokensPerGroup>
struct Linear {
  LinearOutput out[3];
  int outputs = 1;
  const float* x = nullptr;  // (T, in), row stride ldx
  long long ldx = 0;
  int T = 0, in = 0;
  int threads = kLinearThreads;  // per block: a launch parameter, never a result bit

  long long total_rows() const {
    long long n = 0;
    for (int s = 0; s < outputs; ++s) n += out[s].rows;
    return n;
  }
  LaunchShape shape() const {
    check_linear_shape("Linear", TPG, T, in, threads);
    const long long rpb = linear_rows_per_block<TPG>(T, threads);
    return {{static_cast<int>((total_rows() + rpb - 1) / rpb), 1, 1}, threads, 0};
  }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    long long rows = 0;
    for (int s = 0; s < outputs; ++s) rows += out[s].rows;
    const LaneGroup g = lane_group<TPG>(ctx, T, rows);
    int s = 0;
    long long r = g.row;
    while (s < outputs - 1 && r >= out[s].rows) r -= out[s].rows, ++s;
    const LinearOutput& o = out[s];
    const void* w = g.nt > 0 ? weight_row<W>(o.w, r, in) : nullptr;
    float acc[TPG] = {};
    if (g.nt > 0) accumulate_row<W, TPG>(w, x + g.t0 * ldx, ldx, in, g.lane, g.nt, acc);
    // Every lane shuffles for every token of the widest slice, active or not.
    const int kmax = T < TPG ? T : TPG;
    for (int k = 0; k < kmax; ++k) {
      const float sum = combine_lanes(ctx, acc[k]);
      if (k < g.nt && g.lane == 0) {
        const float* xk = x + (g.t0 + k) * ldx;
        const float b = o.bias ? o.bias[r] : 0.0f;  // ops::linear adds 0 where there is no bias
        o.y[(g.t0 + k) * o.ldy + r] = exact::add(exact::add(sum, row_tail<W>(w, xk, in)), b);
      }
    }
  }
};

// act (T, I) row stride ldact = silu(x·gateᵀ + gate_bias) ⊙ (x·upᵀ + up_bias); gate and up are
// (I, in) stored as W; biases (I) or null. ops::swiglu(ops::linear(x, gate, bg), ops::linear(x, up, bu)).
template <WeightType W, int TPG = kTokensPerGroup>
struct GateUpSwiglu {
  const void* gate = nullptr;
  const void* up = nullptr;
  const float* gate_bias = nullptr;
  const float* up_bias = nullptr;
  const float* x = nullptr;
  long long ldx = 0;
  float* act = nullptr;
  long long ldact = 0;
  int T = 0, in = 0, features = 0;
  int threads = kLinearThreads;  // per block: a launch parameter, never a result bit

  LaunchShape shape() const {
    check_linear_shape("GateUpSwiglu", TPG, T, in, threads);
    const int rpb = linear_rows_per_block<TPG>(T, threads);
    return {{(features + rpb - 1) / rpb, 1, 1}, threads, 0};
  }

  template <class Ctx>
  SPECDEC_HD void operator()(const Ctx& ctx) const {
    const LaneGroup g = lane_group<TPG>(ctx, T, features);
    const void* wg = g.nt > 0 ? weight_row<W>(gate, g.row, in) : nullptr;
    const void* wu = g.nt > 0 ? weight_row<W>(up, g.row, in) : nullptr;
    float ag[TPG] = {};
    float au[TPG] = {};
    if (g.nt > 0) {
      accumulate_row<W, TPG>(wg, x + g.t0 * ldx, ldx, in, g.lane, g.nt, ag);
      accumulate_row<W, TPG>(wu, x + g.t0 * ldx, ldx, in, g.lane, g.nt, au);
    }
    const int kmax = T < TPG ? T : TPG;
    for (int k = 0; k < kmax; ++k) {
      const float sg = combine_lanes(ctx, ag[k]);
      const float su = combine_lanes(ctx, au[k]);
      if (k < g.nt && g.lane == 0) {
        const float* xk = x + (g.t0 + k) * ldx;
        const float gv = exact::add(exact::add(sg, row_tail<W>(wg, xk, in)), gate_bias ? gate_bias[g.row] : 0.0f);
        const float uv = exact::add(exact::add(su, row_tail<W>(wu, xk, in)), up_bias ? up_bias[g.row] : 0.0f);
        act[(g.t0 + k) * ldact + g.row] = exact::mul(exact::silu(gv), uv);
      }
    }
  }
};

}  // namespace specdec::kernels
