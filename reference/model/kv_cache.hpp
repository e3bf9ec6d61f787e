#pragma once
// The key/value cache of one sequence. `KVCache` is the interface the decoding algorithms use
// (length, truncate, gather); each backend provides its own storage. `DenseKVCache` is the
// reference's: per layer a (capacity, nkv·hd) matrix of keys (after RoPE) and one of values, plus
// the absolute position of every slot (needed for sliding-window attention and for tests).
#include <cstdint>
#include <vector>

#include "reference/core/tensor.hpp"

namespace specdec {

class KVCache {
 public:
  virtual ~KVCache() = default;
  virtual int length() const = 0;
  virtual int capacity() const = 0;
  // Forget every slot at index >= new_length (e.g. rejected draft tokens).
  virtual void truncate(int new_length) = 0;
  // Compact: move the listed slots, in the given order, to [start, start + slots.size()) and make
  // that the new length. Slots must be distinct, in [start, length). Used after tree verification
  // to bring the accepted path's entries into place behind the prefix.
  virtual void gather(int start, const std::vector<int>& slots) = 0;
};

class DenseKVCache final : public KVCache {
 public:
  DenseKVCache(int layers, int kv_dim, int capacity);

  int length() const override { return length_; }
  int capacity() const override { return capacity_; }
  void truncate(int new_length) override;
  void gather(int start, const std::vector<int>& slots) override;

  // Reserves n new slots at the end and returns the first one's index; throws if the cache would
  // overflow its capacity.
  int append(int n, const int32_t* positions);

  int layers() const { return static_cast<int>(keys_.size()); }
  int kv_dim() const { return kv_dim_; }
  Matrix& keys(int layer) { return keys_[layer]; }      // (capacity, nkv·hd); rows < length valid
  Matrix& values(int layer) { return values_[layer]; }  // (capacity, nkv·hd)
  const Matrix& keys(int layer) const { return keys_[layer]; }
  const Matrix& values(int layer) const { return values_[layer]; }
  int32_t position(int slot) const { return positions_[slot]; }

  // Bitwise equality of the valid part (length, positions, keys, values) of two caches.
  bool equals(const DenseKVCache& other) const;

 private:
  int kv_dim_;
  int capacity_;
  int length_ = 0;
  std::vector<Matrix> keys_, values_;
  std::vector<int32_t> positions_;
};

}  // namespace specdec
