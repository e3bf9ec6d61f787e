#include "optimized/cuda/cuda_kv_cache.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "reference/core/error.hpp"

namespace specdec::cuda {

CudaKVCache::CudaKVCache(DeviceRuntime& rt, int layers, int kv_dim, int capacity)
    : rt_(&rt), layers_(layers), kv_dim_(kv_dim), capacity_(capacity) {
  if (layers < 1 || kv_dim < 1 || capacity < 1)
    throw Error("KV cache: " + std::to_string(layers) + " layers of width " + std::to_string(kv_dim) + " and capacity " +
                std::to_string(capacity) + "; each must be at least 1");
  const std::size_t n = static_cast<std::size_t>(layers) * capacity * kv_dim;
  keys_ = DeviceBuffer<float>(rt, n);
  values_ = DeviceBuffer<float>(rt, n);
  scratch_ = DeviceBuffer<float>(rt, static_cast<std::size_t>(capacity) * kv_dim);
  slots_ = DeviceBuffer<int32_t>(rt, static_cast<std::size_t>(capacity));
  positions_.assign(static_cast<std::size_t>(capacity), 0);
}

void CudaKVCache::truncate(int new_length) {
  if (new_length < 0 || new_length > length_)
    throw Error("KV cache: cannot truncate to " + std::to_string(new_length) + " slots; the cache holds " +
                std::to_string(length_));
  length_ = new_length;
}

void CudaKVCache::check_append(int n) const {
  if (n < 0 || length_ + n > capacity_)
    throw Error("KV cache: " + std::to_string(n) + " new tokens do not fit; the cache holds " + std::to_string(length_) +
                " of " + std::to_string(capacity_) + " slots");
}

int CudaKVCache::append(int n, const int32_t* positions) {
  check_append(n);
  const int first = length_;
  for (int i = 0; i < n; ++i) positions_[static_cast<std::size_t>(first + i)] = positions[i];
  length_ += n;
  return first;
}

void CudaKVCache::gather(int start, const std::vector<int>& slots) {
  const int n = static_cast<int>(slots.size());
  if (start < 0 || start > length_)
    throw Error("KV cache: gather start " + std::to_string(start) + " outside [0, " + std::to_string(length_) + "]");
  std::vector<bool> seen(static_cast<std::size_t>(length_), false);
  for (int s : slots) {
    if (s < start || s >= length_ || seen[static_cast<std::size_t>(s)])
      throw Error("KV cache: gather slot " + std::to_string(s) + " is repeated or outside [" + std::to_string(start) +
                  ", " + std::to_string(length_) + ")");
    seen[static_cast<std::size_t>(s)] = true;
  }
  if (n > 0) {
    const std::vector<int32_t> rows(slots.begin(), slots.end());
    rt_->copy_to_device(slots_.get(), rows.data(), sizeof(int32_t) * rows.size());
    for (int l = 0; l < layers_; ++l) {
      for (float* block : {keys(l), values(l)}) {
        rt_->launch(kernels::GatherRows{block, kv_dim_, slots_.get(), scratch_.get(), kv_dim_, n, kv_dim_});
        rt_->launch(kernels::GatherRows{scratch_.get(), kv_dim_, nullptr, block + static_cast<std::size_t>(start) * kv_dim_,
                                        kv_dim_, n, kv_dim_});
      }
    }
  }
  std::vector<int32_t> pos(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) pos[static_cast<std::size_t>(i)] = positions_[static_cast<std::size_t>(slots[static_cast<std::size_t>(i)])];
  for (int i = 0; i < n; ++i) positions_[static_cast<std::size_t>(start + i)] = pos[static_cast<std::size_t>(i)];
  length_ = start + n;
}

std::vector<float> CudaKVCache::download(const float* block) const {
  std::vector<float> h(static_cast<std::size_t>(length_) * kv_dim_);
  if (!h.empty()) rt_->copy_to_host(h.data(), block, sizeof(float) * h.size());
  return h;
}

namespace {

// Bitwise equality; memcmp may not be handed the null data() of an empty (length 0) cache's copy.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), sizeof(float) * a.size()) == 0);
}

}  // namespace

bool CudaKVCache::equals(const CudaKVCache& o) const {
  if (o.length_ != length_ || o.layers_ != layers_ || o.kv_dim_ != kv_dim_) return false;
  if (!std::equal(positions_.begin(), positions_.begin() + length_, o.positions_.begin())) return false;
  for (int l = 0; l < layers_; ++l) {
    const std::vector<float> a = download(keys(l)), b = o.download(o.keys(l));
    const std::vector<float> c = download(values(l)), d = o.download(o.values(l));
    if (!same_bits(a, b) || !same_bits(c, d)) return false;
  }
  return true;
}

bool CudaKVCache::equals(const DenseKVCache& reference) const {
  if (reference.length() != length_ || reference.layers() != layers_ || reference.kv_dim() != kv_dim_) return false;
  for (int l = 0; l < layers_; ++l) {
    const std::vector<float> k = download(keys(l)), v = download(values(l));
    for (int s = 0; s < length_; ++s) {
      if (reference.position(s) != positions_[static_cast<std::size_t>(s)]) return false;
      if (std::memcmp(k.data() + static_cast<std::size_t>(s) * kv_dim_, reference.keys(l).row(s).data(), sizeof(float) * kv_dim_) ||
          std::memcmp(v.data() + static_cast<std::size_t>(s) * kv_dim_, reference.values(l).row(s).data(), sizeof(float) * kv_dim_))
        return false;
    }
  }
  return true;
}

}  // namespace specdec::cuda
