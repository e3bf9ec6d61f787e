#pragma once
// The cpu backend's KV cache: per layer one (capacity, nkv·hd) fp32 block of keys (after RoPE)
// and one of values, plus every slot's absolute position (sliding windows). The same layout as the
// reference's DenseKVCache, allocated once; truncate and gather work in place.
#include <cstdint>
#include <vector>

#include "reference/model/kv_cache.hpp"

namespace specdec::cpu {

class CpuKVCache final : public KVCache {
 public:
  CpuKVCache(int layers, int kv_dim, int capacity);

  int length() const override { return length_; }
  int capacity() const override { return capacity_; }
  void truncate(int new_length) override;
  // Moves the listed slots to [start, start + slots.size()) in place; an ascending list (an
  // accepted tree path) is moved row by row without a temporary copy.
  void gather(int start, const std::vector<int>& slots) override;

  // Reserves n new slots at the end and returns the first one's index; throws if the cache would
  // overflow its capacity.
  int append(int n, const int32_t* positions);
  // Throws what append(n, ·) would throw, touching nothing (a batch checks every cache first).
  void check_append(int n) const;

  int layers() const { return layers_; }
  int kv_dim() const { return kv_dim_; }
  // Row `slot` of layer `layer`: kv_dim floats (rows < length() valid).
  float* keys(int layer, int slot) { return keys_.data() + offset(layer, slot); }
  float* values(int layer, int slot) { return values_.data() + offset(layer, slot); }
  const float* keys(int layer, int slot) const { return keys_.data() + offset(layer, slot); }
  const float* values(int layer, int slot) const { return values_.data() + offset(layer, slot); }
  int32_t position(int slot) const { return positions_[static_cast<std::size_t>(slot)]; }

  // Bitwise equality of the valid part (length, positions, keys, values) with another cache of
  // this backend or with the reference's.
  bool equals(const CpuKVCache& other) const;
  bool equals(const DenseKVCache& reference) const;

 private:
  std::size_t offset(int layer, int slot) const {
    return (static_cast<std::size_t>(layer) * capacity_ + slot) * kv_dim_;
  }
  void move_row(int from, int to);

  int layers_;
  int kv_dim_;
  int capacity_;
  int length_ = 0;
  std::vector<float> keys_, values_;  // (layers, capacity, kv_dim)
  std::vector<int32_t> positions_;    // (capacity)
};

}  // namespace specdec::cpu
