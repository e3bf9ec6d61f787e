#include "optimized/cpu/cpu_kv_cache.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "reference/core/error.hpp"

namespace specdec::cpu {

CpuKVCache::CpuKVCache(int layers, int kv_dim, int capacity) : layers_(layers), kv_dim_(kv_dim), capacity_(capacity) {
  if (layers < 1 || kv_dim < 1 || capacity < 1) {
    throw Error("KV cache: layers, kv_dim and capacity must be positive (got " + std::to_string(layers) + ", " +
                std::to_string(kv_dim) + ", " + std::to_string(capacity) + ")");
  }
  const std::size_t n = static_cast<std::size_t>(layers) * capacity * kv_dim;
  keys_.assign(n, 0.0f);
  values_.assign(n, 0.0f);
  positions_.assign(static_cast<std::size_t>(capacity), -1);
}

void CpuKVCache::truncate(int new_length) {
  if (new_length < 0 || new_length > length_) {
    throw Error("KV cache: cannot truncate to " + std::to_string(new_length) + " slots; the cache holds " +
                std::to_string(length_));
  }
  length_ = new_length;
}

void CpuKVCache::move_row(int from, int to) {
  if (from == to) return;
  const std::size_t bytes = sizeof(float) * kv_dim_;
  for (int l = 0; l < layers_; ++l) {
    std::memcpy(keys(l, to), keys(l, from), bytes);
    std::memcpy(values(l, to), values(l, from), bytes);
  }
  positions_[static_cast<std::size_t>(to)] = positions_[static_cast<std::size_t>(from)];
}

void CpuKVCache::gather(int start, const std::vector<int>& slots) {
  const int n = static_cast<int>(slots.size());
  if (start < 0 || start > length_) {
    throw Error("KV cache: gather start " + std::to_string(start) + " outside [0, " + std::to_string(length_) + "]");
  }
  std::vector<bool> seen(static_cast<std::size_t>(length_), false);
  for (int s : slots) {
    if (s < start || s >= length_ || seen[static_cast<std::size_t>(s)]) {
      throw Error("KV cache: gather slot " + std::to_string(s) + " is repeated or outside [" + std::to_string(start) +
                  ", " + std::to_string(length_) + ")");
    }
    seen[static_cast<std::size_t>(s)] = true;
  }
  if (std::is_sorted(slots.begin(), slots.end())) {
    // Ascending and distinct: slots[i] >= start + i, and every later source lies beyond the row
    // written now, so moving front to back never overwrites a row still to be read.
    for (int i = 0; i < n; ++i) move_row(slots[static_cast<std::size_t>(i)], start + i);
  } else {
    // Any other order goes through a copy of just the selected rows.
    const std::size_t row = static_cast<std::size_t>(kv_dim_);
    std::vector<float> k(static_cast<std::size_t>(n) * row), v(static_cast<std::size_t>(n) * row);
    for (int l = 0; l < layers_; ++l) {
      for (int i = 0; i < n; ++i) {
        std::memcpy(&k[i * row], keys(l, slots[static_cast<std::size_t>(i)]), sizeof(float) * row);
        std::memcpy(&v[i * row], values(l, slots[static_cast<std::size_t>(i)]), sizeof(float) * row);
      }
      std::memcpy(keys(l, start), k.data(), sizeof(float) * k.size());
      std::memcpy(values(l, start), v.data(), sizeof(float) * v.size());
    }
    std::vector<int32_t> pos(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) pos[static_cast<std::size_t>(i)] = positions_[static_cast<std::size_t>(slots[static_cast<std::size_t>(i)])];
    std::copy(pos.begin(), pos.end(), positions_.begin() + start);
  }
  length_ = start + n;
}

void CpuKVCache::check_append(int n) const {
  if (n < 0 || length_ + n > capacity_) {
    throw Error("KV cache: " + std::to_string(n) + " new tokens do not fit; the cache holds " +
                std::to_string(length_) + " of " + std::to_string(capacity_) + " slots");
  }
}

int CpuKVCache::append(int n, const int32_t* positions) {
  check_append(n);
  const int first = length_;
  for (int i = 0; i < n; ++i) positions_[static_cast<std::size_t>(first + i)] = positions[i];
  length_ += n;
  return first;
}

bool CpuKVCache::equals(const CpuKVCache& o) const {
  if (length_ != o.length_ || kv_dim_ != o.kv_dim_ || layers_ != o.layers_) return false;
  if (std::memcmp(positions_.data(), o.positions_.data(), sizeof(int32_t) * length_) != 0) return false;
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(length_) * kv_dim_;
  for (int l = 0; l < layers_; ++l) {
    if (std::memcmp(keys(l, 0), o.keys(l, 0), bytes) != 0) return false;
    if (std::memcmp(values(l, 0), o.values(l, 0), bytes) != 0) return false;
  }
  return true;
}

bool CpuKVCache::equals(const DenseKVCache& r) const {
  if (length_ != r.length() || kv_dim_ != r.kv_dim() || layers_ != r.layers()) return false;
  const std::size_t bytes = sizeof(float) * kv_dim_;
  for (int s = 0; s < length_; ++s) {
    if (position(s) != r.position(s)) return false;
    for (int l = 0; l < layers_; ++l) {
      if (std::memcmp(keys(l, s), r.keys(l).row(s).data(), bytes) != 0) return false;
      if (std::memcmp(values(l, s), r.values(l).row(s).data(), bytes) != 0) return false;
    }
  }
  return true;
}

}  // namespace specdec::cpu
