#include "optimized/cpu/cpu_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "optimized/cpu/dot_kernels.hpp"
#include "optimized/cpu/vector_exp.hpp"
#include "reference/model/ops.hpp"

namespace specdec::cpu {

void attention(const ModelConfig& c, const float* q, std::size_t ldq, const CpuKVCache& cache, int layer,
               const TokenBlock& block, int window, const std::vector<int>& rows, float* out, std::size_t ldo) {
  const int n_rows = static_cast<int>(rows.size());
  const int nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int group = nh / nkv;
  const int cols = block.first_slot + static_cast<int>(block.positions.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  // The keys each row sees, in slot order: allowed by the mask and inside the window.
  std::vector<std::vector<int>> visible(static_cast<std::size_t>(n_rows));
  for (int i = 0; i < n_rows; ++i) {
    const int t = rows[static_cast<std::size_t>(i)];
    const int q_pos = block.positions[static_cast<std::size_t>(t)];
    std::vector<int>& v = visible[static_cast<std::size_t>(i)];
    for (int j = 0; j < cols; ++j) {
      if (!block.mask->allowed(t, j)) continue;
      if (window > 0 && q_pos - cache.position(j) >= window) continue;
      v.push_back(j);
    }
  }

  const bool parallel = static_cast<long long>(n_rows) * nh * cols * hd >= ops::parallel_work_threshold();
#pragma omp parallel if (parallel)
  {
    std::vector<float> scores;  // (heads of the group, visible keys)
#pragma omp for collapse(2) schedule(static)
    for (int i = 0; i < n_rows; ++i) {
      for (int g = 0; g < nkv; ++g) {
        const std::vector<int>& keys = visible[static_cast<std::size_t>(i)];
        const int n_keys = static_cast<int>(keys.size());
        const float* qg = q + static_cast<std::size_t>(rows[static_cast<std::size_t>(i)]) * ldq +
                          static_cast<std::size_t>(g) * group * hd;  // the group's heads, contiguous
        scores.resize(static_cast<std::size_t>(group) * n_keys);
        // Scores of every head in the group against blocks of keys: out[r·TB + h] = q_h · k_r.
        for (int k0 = 0; k0 < n_keys; k0 += kMaxBlockRows) {
          const int R = std::min(kMaxBlockRows, n_keys - k0);
          const void* ptrs[kMaxBlockRows];
          for (int r = 0; r < R; ++r) ptrs[r] = cache.keys(layer, keys[static_cast<std::size_t>(k0 + r)]) + g * hd;
          for (int h0 = 0; h0 < group; h0 += kMaxBlockTokens) {
            const int TB = std::min(kMaxBlockTokens, group - h0);
            float block_out[kMaxBlockRows * kMaxBlockTokens];
            dot_block(Dtype::F32, ptrs, R, qg + static_cast<std::size_t>(h0) * hd, static_cast<std::size_t>(hd), TB, hd,
                      block_out);
            for (int r = 0; r < R; ++r)
              for (int h = 0; h < TB; ++h)
                scores[static_cast<std::size_t>(h0 + h) * n_keys + k0 + r] = block_out[r * TB + h] * scale;
          }
        }
        for (int h = 0; h < group; ++h) {
          float* s = scores.data() + static_cast<std::size_t>(h) * n_keys;
          float max_score = -std::numeric_limits<float>::infinity();
          for (int j = 0; j < n_keys; ++j)
            if (s[j] > max_score) max_score = s[j];
          exp_shifted(s, max_score, n_keys, s);
          float sum = 0.0f;
          for (int j = 0; j < n_keys; ++j) sum += s[j];
          float* o = out + static_cast<std::size_t>(i) * ldo + static_cast<std::size_t>(g * group + h) * hd;
          std::fill(o, o + hd, 0.0f);
          for (int j = 0; j < n_keys; ++j) {
            const float* v = cache.values(layer, keys[static_cast<std::size_t>(j)]) + g * hd;
            const float p = s[j];
            for (int d = 0; d < hd; ++d) o[d] += p * v[d];
          }
          const float inv = n_keys == 0 ? 0.0f : 1.0f / sum;
          for (int d = 0; d < hd; ++d) o[d] *= inv;
        }
      }
    }
  }
}

}  // namespace specdec::cpu
