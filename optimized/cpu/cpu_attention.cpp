#include "optimized/cpu/cpu_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "optimized/cpu/dot_kernels.hpp"
#include "optimized/cpu/vector_exp.hpp"
#include "reference/model/ops.hpp"

namespace specdec::cpu {

namespace {

// One output row of the batch: its sequence and the keys it sees.
struct AttentionRow {
  const AttentionSequence* seq;
  int token;              // index into the sequence's block
  float* out;             // (nh·hd)
  std::vector<int> keys;  // visible slots, in slot order
};

}  // namespace

void attention(const ModelConfig& c, int layer, int window, const std::vector<AttentionSequence>& seqs, std::size_t ldq,
               std::size_t ldo) {
  const int nh = c.num_attention_heads, nkv = c.num_key_value_heads, hd = c.head_dim;
  const int group = nh / nkv;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  // The keys each row sees, in slot order: allowed by its sequence's mask and inside the window.
  std::vector<AttentionRow> rows;
  long long work = 0;  // multiply-adds of the scores, for the threading threshold
  for (const AttentionSequence& s : seqs) {
    const TokenBlock& block = *s.block;
    const int cols = block.first_slot + static_cast<int>(block.positions.size());
    for (std::size_t i = 0; i < s.rows->size(); ++i) {
      const int t = (*s.rows)[i];
      const int q_pos = block.positions[static_cast<std::size_t>(t)];
      AttentionRow r{&s, t, s.out + i * ldo, {}};
      for (int j = 0; j < cols; ++j) {
        if (!block.mask->allowed(t, j)) continue;
        if (window > 0 && q_pos - s.cache->position(j) >= window) continue;
        r.keys.push_back(j);
      }
      rows.push_back(std::move(r));
      work += static_cast<long long>(nh) * cols * hd;
    }
  }
  const int n_rows = static_cast<int>(rows.size());

  const bool parallel = work >= ops::parallel_work_threshold();
#pragma omp parallel if (parallel)
  {
    std::vector<float> scores;        // (heads of the group, visible keys)
    std::vector<float> inv_sums;      // (heads of the group)
    std::vector<const float*> values;  // (visible keys): the group's value rows
#pragma omp for collapse(2) schedule(static)
    for (int i = 0; i < n_rows; ++i) {
      for (int g = 0; g < nkv; ++g) {
        const AttentionRow& row = rows[static_cast<std::size_t>(i)];
        const CpuKVCache& cache = *row.seq->cache;
        const std::vector<int>& keys = row.keys;
        const int n_keys = static_cast<int>(keys.size());
        const float* qg = row.seq->q + static_cast<std::size_t>(row.token) * ldq +
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
        inv_sums.resize(static_cast<std::size_t>(group));
        for (int h = 0; h < group; ++h) {
          float* s = scores.data() + static_cast<std::size_t>(h) * n_keys;
          float max_score = -std::numeric_limits<float>::infinity();
          for (int j = 0; j < n_keys; ++j)
            if (s[j] > max_score) max_score = s[j];
          exp_shifted(s, max_score, n_keys, s);
          float sum = 0.0f;
          for (int j = 0; j < n_keys; ++j) sum += s[j];
          inv_sums[static_cast<std::size_t>(h)] = n_keys == 0 ? 0.0f : 1.0f / sum;
        }
        // o_h = (Σ_j e_hj · v_j) · (1/sum_h) for the group's heads at once: each value row is read
        // once per group, not once per head.
        values.resize(static_cast<std::size_t>(n_keys));
        for (int j = 0; j < n_keys; ++j) values[static_cast<std::size_t>(j)] = cache.values(layer, keys[static_cast<std::size_t>(j)]) + g * hd;
        weighted_sum(scores.data(), static_cast<std::size_t>(n_keys), group, values.data(), n_keys, hd, inv_sums.data(),
                     row.out + static_cast<std::size_t>(g) * group * hd, static_cast<std::size_t>(hd));
      }
    }
  }
}

}  // namespace specdec::cpu
