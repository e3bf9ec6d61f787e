#include "optimized/cpu/fused_linear.hpp"

#include <algorithm>
#include <cmath>

#include "optimized/cpu/dot_kernels.hpp"
#include "reference/core/exact_math.hpp"
#include "reference/core/stream_buffer.hpp"
#include "reference/model/ops.hpp"

namespace specdec::cpu {

namespace {

// A block is four consecutive weight rows (pack_gate_up's unit) and up to kMaxTileTokens tokens;
// dot_tile reads the block's weights once for all of them and prefetches the next block.
constexpr int kRowsPerBlock = kMaxBlockRows;

// Runs `epilogue(r0, R, t0, TB, out)` for every block of weight rows and group of tokens, where
// out[r·TB + t] = dot(x_{t0+t}, w_{r0+r}). Blocks are split statically over the threads.
template <class Epilogue>
void for_each_block(const PackedMatrix& w, const float* x, std::size_t ldx, int T, const Epilogue& epilogue) {
  const int rows = w.rows(), n = w.cols();
  const int blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
  const std::size_t stride = static_cast<std::size_t>(n) * w.element_size();
  const bool parallel = static_cast<long long>(T) * rows * n >= ops::parallel_work_threshold();
  // Activation rows at a stride that is a multiple of 4 KiB (H = 1024, 2048, …) fall into the
  // same L1 sets: a pass of a T > 2 tile reads four of them next to its two weight rows and the
  // next rows' prefetched lines, more than a set holds. A copy one cache line wider spreads them
  // over the sets.
  StreamBuffer padded;
  if (T > 2 && ldx * sizeof(float) % 4096 == 0) {
    const std::size_t ldp = ldx + 64 / sizeof(float);
    padded = allocate_stream_buffer(static_cast<std::size_t>(T) * ldp * sizeof(float));
    auto* xp = reinterpret_cast<float*>(padded.get());
    for (int t = 0; t < T; ++t) std::copy(x + t * ldx, x + t * ldx + n, xp + t * ldp);
    x = xp;
    ldx = ldp;
  }
#pragma omp parallel for if (parallel) schedule(static)
  for (int b = 0; b < blocks; ++b) {
    const int r0 = b * kRowsPerBlock;
    const int R = std::min(kRowsPerBlock, rows - r0);
    const int ahead = r0 + 2 * kRowsPerBlock;  // the rows dot_tile prefetches: two blocks ahead
    const void* next = ahead + R <= rows ? w.row(ahead) : nullptr;
    float out[kRowsPerBlock * kMaxTileTokens];
    for (int t0 = 0; t0 < T; t0 += kMaxTileTokens) {
      const int TB = std::min(kMaxTileTokens, T - t0);
      dot_tile(w.dtype(), w.row(r0), stride, R, x + static_cast<std::size_t>(t0) * ldx, ldx, TB, n, out,
               t0 == 0 ? next : nullptr);
      epilogue(r0, R, t0, TB, out);
    }
  }
}

}  // namespace

void linear(const PackedMatrix& w, const float* bias, const float* x, std::size_t ldx, int T, float* y,
            std::size_t ldy, bool accumulate) {
  for_each_block(w, x, ldx, T, [&](int r0, int R, int t0, int TB, const float* out) {
    for (int r = 0; r < R; ++r) {
      const float b = bias ? bias[r0 + r] : 0.0f;
      for (int t = 0; t < TB; ++t) {
        float& dst = y[static_cast<std::size_t>(t0 + t) * ldy + r0 + r];
        const float v = out[r * TB + t] + b;
        dst = accumulate ? dst + v : v;
      }
    }
  });
}

PackedMatrix pack_gate_up(int I, int cols, const PackedMatrix::RowReader& gate, const PackedMatrix::RowReader& up,
                          Dtype precision, const std::string& name) {
  // Packed row r: block r / 4 holds features f0 = 2·(r / 4) and f0 + 1 (one at the end when I is
  // odd); its first `pair` rows are their gate rows, the next `pair` their up rows.
  return PackedMatrix(2 * I, cols, precision, name, [&](int64_t first, int64_t n, float* out) {
    for (int64_t r = first; r < first + n; ++r) {
      const int64_t f0 = r / 4 * 2, pair = std::min<int64_t>(2, I - f0), j = r % 4;
      float* row = out + (r - first) * cols;
      if (j < pair) {
        gate(f0 + j, 1, row);
      } else {
        up(f0 + j - pair, 1, row);
      }
    }
  });
}

PackedMatrix pack_gate_up(const Matrix& gate, const Matrix& up, Dtype precision, const std::string& name) {
  const auto cols = gate.cols();
  auto rows_of = [cols](const Matrix& m) {
    return [&m, cols](int64_t first, int64_t n, float* out) {
      std::copy(m.data() + first * cols, m.data() + (first + n) * cols, out);
    };
  };
  return pack_gate_up(static_cast<int>(gate.rows()), static_cast<int>(cols), rows_of(gate), rows_of(up), precision, name);
}

void linear_swiglu(const PackedMatrix& gate_up, const float* gate_bias, const float* up_bias, const float* x,
                   std::size_t ldx, int T, float* act, std::size_t ldact) {
  for_each_block(gate_up, x, ldx, T, [&](int r0, int R, int t0, int TB, const float* out) {
    const int pair = R / 2;  // features in this block: rows [0, pair) are gates, [pair, R) ups
    const int f0 = r0 / 2;
    for (int j = 0; j < pair; ++j) {
      const float bg = gate_bias ? gate_bias[f0 + j] : 0.0f;
      const float bu = up_bias ? up_bias[f0 + j] : 0.0f;
      for (int t = 0; t < TB; ++t) {
        const float g = out[j * TB + t] + bg;
        const float u = out[(pair + j) * TB + t] + bu;
        act[static_cast<std::size_t>(t0 + t) * ldact + f0 + j] = exact::silu(g) * u;
      }
    }
  });
}

}  // namespace specdec::cpu
