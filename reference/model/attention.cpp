#include "reference/model/attention.hpp"

#include <limits>
#include <vector>

#include "reference/core/exact_math.hpp"
#include "reference/model/ops.hpp"

namespace specdec {

void attend(const float* q, const float* const* keys, const float* const* values, int n, int hd, float scale,
            float* out) {
  std::vector<float> e(static_cast<size_t>(n));
  float max_score = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < n; ++i) {
    e[static_cast<size_t>(i)] = ops::dot(q, keys[i], hd) * scale;
    if (e[static_cast<size_t>(i)] > max_score) max_score = e[static_cast<size_t>(i)];
  }
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    e[static_cast<size_t>(i)] = exact::exp(e[static_cast<size_t>(i)] - max_score);
    sum += e[static_cast<size_t>(i)];
  }
  for (int d = 0; d < hd; ++d) out[d] = 0.0f;
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < hd; ++d) out[d] += e[static_cast<size_t>(i)] * values[i][d];
  const float inv = n == 0 ? 0.0f : 1.0f / sum;
  for (int d = 0; d < hd; ++d) out[d] *= inv;
}

}  // namespace specdec
