#pragma once
// Which keys each new token may attend to in one forward call. Rows are the T new tokens; columns
// are the cache slots [0, C) followed by the new tokens' own slots [C, C + T) (the new tokens are
// written into the cache before attention). Chains, trees and P-EAGLE's parallel slots all go
// through the same forward with different masks.
#include <cstdint>
#include <string>
#include <vector>

namespace specdec {

class AttentionMask {
 public:
  AttentionMask() = default;
  AttentionMask(int rows, int cols);  // nothing allowed

  // Ordinary causal attention: row t sees slots [0, C + t].
  static AttentionMask causal(int cache_length, int new_tokens);
  // A tree of new tokens: parents[t] is the index of t's parent among the new tokens, or −1 for a
  // node hanging directly off the cached prefix. Parents precede their children. Row t sees the
  // whole cached prefix, its ancestors and itself (EAGLE's tree mask).
  static AttentionMask tree(int cache_length, const std::vector<int>& parents);

  int rows() const { return rows_; }
  int cols() const { return cols_; }
  bool allowed(int row, int col) const { return bits_[static_cast<size_t>(row) * cols_ + col] != 0; }
  void set(int row, int col, bool allowed);

  // One line per row of '1'/'.' characters, for tests and the teaching views.
  std::string to_string() const;

 private:
  int rows_ = 0;
  int cols_ = 0;
  std::vector<uint8_t> bits_;  // (rows, cols) row-major
};

}  // namespace specdec
