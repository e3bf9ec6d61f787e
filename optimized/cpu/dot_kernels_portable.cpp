// The portable path: ops::dot's operations with std::fma, R·TB of them side by side.
#include <algorithm>

#include "optimized/cpu/dot_kernels_paths.hpp"

namespace specdec::cpu::paths {

namespace {

struct Portable {
  template <Dtype D, int R, int TB>
  static void block(const void* const* rows, const float* x, std::size_t ldx, int n, float* out) {
    float acc[R][TB][8] = {};
    int i = 0;
    for (; i + 8 <= n; i += 8) {
      for (int r = 0; r < R; ++r) {
        float w[8];
        for (int l = 0; l < 8; ++l) w[l] = widen_one<D>(rows[r], i + l);
        for (int t = 0; t < TB; ++t) {
          const float* xt = x + t * ldx + i;
          for (int l = 0; l < 8; ++l) acc[r][t][l] = std::fma(xt[l], w[l], acc[r][t][l]);
        }
      }
    }
    for (int r = 0; r < R; ++r)
      for (int t = 0; t < TB; ++t) out[r * TB + t] = combine(acc[r][t], tail_dot<D>(x + t * ldx, rows[r], i, n));
  }

  // The same dot products, kMaxBlockTokens tokens at a time.
  template <Dtype D, int R>
  static void tile(const std::byte* w, std::size_t stride, const float* x, std::size_t ldx, int T, int n, float* out,
                   const std::byte*) {
    const void* rows[R];
    for (int r = 0; r < R; ++r) rows[r] = w + r * stride;
    float part[R * kMaxBlockTokens];
    for (int t0 = 0; t0 < T; t0 += kMaxBlockTokens) {
      const int TB = std::min(kMaxBlockTokens, T - t0);
      const float* xt = x + t0 * ldx;
      switch (TB) {
        case 1: block<D, R, 1>(rows, xt, ldx, n, part); break;
        case 2: block<D, R, 2>(rows, xt, ldx, n, part); break;
        case 3: block<D, R, 3>(rows, xt, ldx, n, part); break;
        default: block<D, R, 4>(rows, xt, ldx, n, part); break;
      }
      for (int r = 0; r < R; ++r)
        for (int t = 0; t < TB; ++t) out[r * T + t0 + t] = part[r * TB + t];
    }
  }

  template <Dtype D>
  static void widen(const void* src, int n, float* dst) {
    for (int i = 0; i < n; ++i) dst[i] = widen_one<D>(src, i);
  }

  static void weighted_sum(const float* p, std::size_t ldp, int G, const float* const* rows, int n, int m,
                           const float* scale, float* out, std::size_t ldo) {
    for (int h = 0; h < G; ++h) {
      float* o = out + h * ldo;
      std::fill(o, o + m, 0.0f);
      for (int j = 0; j < n; ++j) {
        const float pj = p[h * ldp + j];
        for (int d = 0; d < m; ++d) o[d] += pj * rows[j][d];
      }
      for (int d = 0; d < m; ++d) o[d] *= scale[h];
    }
  }
};

}  // namespace

const KernelTable& portable_kernels() {
  static constexpr KernelTable table{make_block_table<Portable>(), make_tile_table<Portable>(),
                                     make_widen_table<Portable>(), &Portable::weighted_sum};
  return table;
}

}  // namespace specdec::cpu::paths
