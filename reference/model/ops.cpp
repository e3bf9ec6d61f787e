#include "reference/model/ops.hpp"

#include <cmath>

#include "reference/core/exact_math.hpp"
#include "reference/core/input_limits.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace specdec::ops {

namespace {
long long g_parallel_work = 1LL << 17;  // multiply-adds below which a loop stays on one thread
}  // namespace

long long parallel_work_threshold() { return g_parallel_work; }
void set_parallel_work_threshold(long long work) { g_parallel_work = work < 0 ? 0 : work; }

// The "fma" clone, chosen at load time on CPUs that have the instruction, turns std::fma into
// vfmadd; the default clone calls the C library's fmaf, which rounds the same way (once).
__attribute__((target_clones("fma", "default"))) float dot(const float* a, const float* b, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(a[i + l], b[i + l], acc[l]);
  }
  float tail = 0.0f;
  for (; i < n; ++i) tail = std::fma(a[i], b[i], tail);
  return (((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))) + tail;
}

Matrix linear(const Matrix& x, const Matrix& w, const Vector& bias) {
  const int rows = static_cast<int>(x.rows());
  const int in = static_cast<int>(x.cols());
  const int out = static_cast<int>(w.rows());
  Matrix y(rows, out);
  // Parallel over output features: each element is one independent dot product, so the split
  // never changes a result. Small products stay on one thread (waking a team costs more).
  const bool parallel = static_cast<long long>(rows) * out * in >= g_parallel_work;
#pragma omp parallel for schedule(static) if (parallel)
  for (int o = 0; o < out; ++o) {
    const float* wo = w.data() + static_cast<std::ptrdiff_t>(o) * in;
    const float b = bias.size() ? bias[o] : 0.0f;
    for (int t = 0; t < rows; ++t) y(t, o) = dot(x.data() + static_cast<std::ptrdiff_t>(t) * in, wo, in) + b;
  }
  return y;
}

void rms_norm_inplace(float* x, const float* w, int n, double eps) {
  const float mean_sq = dot(x, x, n) / static_cast<float>(n);
  const float scale = 1.0f / std::sqrt(mean_sq + static_cast<float>(eps));
  for (int i = 0; i < n; ++i) x[i] = w[i] * (x[i] * scale);
}

Matrix rms_norm(const Matrix& x, const Vector& w, double eps) {
  Matrix y = x;
  for (int t = 0; t < y.rows(); ++t) rms_norm_inplace(y.row(t).data(), w.data(), static_cast<int>(y.cols()), eps);
  return y;
}

Matrix swiglu(const Matrix& gate, const Matrix& up) {
  Matrix h(gate.rows(), gate.cols());
  for (Eigen::Index i = 0; i < h.size(); ++i) {
    h.data()[i] = exact::silu(gate.data()[i]) * up.data()[i];
  }
  return h;
}

int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

void set_num_threads(int n) {
  // libgomp aborts or crashes when asked for tens of thousands of threads.
  check_input_limit("worker threads", "the thread count", n, kMaxThreads);
#ifdef _OPENMP
  omp_set_num_threads(n < 1 ? 1 : n);
#else
  (void)n;
#endif
}

}  // namespace specdec::ops
