#include "reference/model/attention_mask.hpp"

#include "reference/core/error.hpp"

namespace specdec {

AttentionMask::AttentionMask(int rows, int cols) : rows_(rows), cols_(cols) {
  if (rows < 0 || cols < 0) throw Error("attention mask: negative size " + std::to_string(rows) + "x" + std::to_string(cols));
  bits_.assign(static_cast<size_t>(rows) * cols, 0);
}

void AttentionMask::set(int row, int col, bool allowed) {
  if (row < 0 || row >= rows_ || col < 0 || col >= cols_) {
    throw Error("attention mask: entry (" + std::to_string(row) + ", " + std::to_string(col) +
                ") outside the " + std::to_string(rows_) + "x" + std::to_string(cols_) + " mask");
  }
  bits_[static_cast<size_t>(row) * cols_ + col] = allowed ? 1 : 0;
}

AttentionMask AttentionMask::causal(int cache_length, int new_tokens) {
  AttentionMask m(new_tokens, cache_length + new_tokens);
  for (int t = 0; t < new_tokens; ++t)
    for (int c = 0; c <= cache_length + t; ++c) m.bits_[static_cast<size_t>(t) * m.cols_ + c] = 1;
  return m;
}

AttentionMask AttentionMask::tree(int cache_length, const std::vector<int>& parents) {
  const int n = static_cast<int>(parents.size());
  AttentionMask m(n, cache_length + n);
  for (int t = 0; t < n; ++t) {
    const int p = parents[t];
    if (p < -1 || p >= t) {
      throw Error("tree mask: node " + std::to_string(t) + " has parent " + std::to_string(p) +
                  "; expected −1 (the cached prefix) or an earlier node in [0, " + std::to_string(t) + ")");
    }
    for (int c = 0; c < cache_length; ++c) m.bits_[static_cast<size_t>(t) * m.cols_ + c] = 1;
    if (p >= 0) {  // inherit the parent's view of the new tokens (its ancestors and itself)
      for (int c = cache_length; c < cache_length + n; ++c)
        m.bits_[static_cast<size_t>(t) * m.cols_ + c] = m.bits_[static_cast<size_t>(p) * m.cols_ + c];
    }
    m.bits_[static_cast<size_t>(t) * m.cols_ + cache_length + t] = 1;
  }
  return m;
}

std::string AttentionMask::to_string() const {
  std::string s;
  for (int r = 0; r < rows_; ++r) {
    for (int c = 0; c < cols_; ++c) s += allowed(r, c) ? '1' : '.';
    s += '\n';
  }
  return s;
}

}  // namespace specdec
