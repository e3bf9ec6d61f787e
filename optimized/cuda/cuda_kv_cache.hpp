#pragma once
// The CUDA backend's KV cache: per layer one (capacity, nkv·hd) fp32 block of keys (after RoPE)
// and one of values in device memory, the slots' absolute positions on the host. Compaction after
// tree verification is an on-device gather (through a scratch block, so any order of slots is
// safe), bitwise DenseKVCache::gather.
#include <cstdint>
#include <vector>

#include "optimized/cuda/device_runtime.hpp"
#include "reference/model/kv_cache.hpp"

namespace specdec::cuda {

class CudaKVCache final : public KVCache {
 public:
  CudaKVCache(DeviceRuntime& rt, int layers, int kv_dim, int capacity);

  int length() const override { return length_; }
  int capacity() const override { return capacity_; }
  void truncate(int new_length) override;
  void gather(int start, const std::vector<int>& slots) override;

  // Reserves n new slots at the end and returns the first one's index; throws if the cache would
  // overflow its capacity.
  int append(int n, const int32_t* positions);
  // Throws append's error unless n new slots fit (a batch checks every cache before appending to any).
  void check_append(int n) const;

  DeviceRuntime& runtime() const { return *rt_; }
  int layers() const { return layers_; }
  int kv_dim() const { return kv_dim_; }
  // Device pointers to layer `layer`'s (capacity, kv_dim) keys and values.
  float* keys(int layer) const { return keys_.get() + offset(layer); }
  float* values(int layer) const { return values_.get() + offset(layer); }
  const std::vector<int32_t>& positions() const { return positions_; }

  // Bitwise equality of the valid part (length, positions, keys, values) with the reference's or
  // with another cache of this backend.
  bool equals(const DenseKVCache& reference) const;
  bool equals(const CudaKVCache& other) const;

 private:
  // The valid rows of one layer's keys (or values), on the host.
  std::vector<float> download(const float* block) const;
  std::size_t offset(int layer) const { return static_cast<std::size_t>(layer) * capacity_ * kv_dim_; }

  DeviceRuntime* rt_;
  int layers_, kv_dim_, capacity_;
  int length_ = 0;
  DeviceBuffer<float> keys_, values_;  // (layers, capacity, kv_dim)
  DeviceBuffer<float> scratch_;        // (capacity, kv_dim): gather's staging rows
  DeviceBuffer<int32_t> slots_;        // (capacity): gather's slot list
  std::vector<int32_t> positions_;     // (capacity)
};

}  // namespace specdec::cuda
