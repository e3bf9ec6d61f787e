#include "reference/model/kv_cache.hpp"

#include <cstring>
#include <string>

#include "reference/core/error.hpp"

namespace specdec {

DenseKVCache::DenseKVCache(int layers, int kv_dim, int capacity) : kv_dim_(kv_dim), capacity_(capacity) {
  if (layers < 1 || kv_dim < 1 || capacity < 1) {
    throw Error("KV cache: layers, kv_dim and capacity must be positive (got " + std::to_string(layers) + ", " +
                std::to_string(kv_dim) + ", " + std::to_string(capacity) + ")");
  }
  keys_.assign(layers, Matrix::Zero(capacity, kv_dim));
  values_.assign(layers, Matrix::Zero(capacity, kv_dim));
  positions_.assign(capacity, -1);
}

void DenseKVCache::truncate(int new_length) {
  if (new_length < 0 || new_length > length_) {
    throw Error("KV cache: cannot truncate to " + std::to_string(new_length) + " slots; the cache holds " +
                std::to_string(length_));
  }
  length_ = new_length;
}

void DenseKVCache::gather(int start, const std::vector<int>& slots) {
  const int n = static_cast<int>(slots.size());
  if (start < 0 || start > length_) {
    throw Error("KV cache: gather start " + std::to_string(start) + " outside [0, " + std::to_string(length_) + "]");
  }
  std::vector<bool> seen(length_, false);
  for (int s : slots) {
    if (s < start || s >= length_ || seen[s]) {
      throw Error("KV cache: gather slot " + std::to_string(s) + " is repeated or outside [" + std::to_string(start) +
                  ", " + std::to_string(length_) + ")");
    }
    seen[s] = true;
  }
  // Copy through a temporary so that any order of slots is safe.
  for (size_t l = 0; l < keys_.size(); ++l) {
    Matrix k(n, kv_dim_), v(n, kv_dim_);
    for (int i = 0; i < n; ++i) {
      k.row(i) = keys_[l].row(slots[i]);
      v.row(i) = values_[l].row(slots[i]);
    }
    keys_[l].middleRows(start, n) = k;
    values_[l].middleRows(start, n) = v;
  }
  std::vector<int32_t> pos(n);
  for (int i = 0; i < n; ++i) pos[i] = positions_[slots[i]];
  for (int i = 0; i < n; ++i) positions_[start + i] = pos[i];
  length_ = start + n;
}

int DenseKVCache::append(int n, const int32_t* positions) {
  if (n < 0 || length_ + n > capacity_) {
    throw Error("KV cache: " + std::to_string(n) + " new tokens do not fit; the cache holds " +
                std::to_string(length_) + " of " + std::to_string(capacity_) + " slots");
  }
  const int first = length_;
  for (int i = 0; i < n; ++i) positions_[first + i] = positions[i];
  length_ += n;
  return first;
}

bool DenseKVCache::equals(const DenseKVCache& o) const {
  if (length_ != o.length_ || kv_dim_ != o.kv_dim_ || keys_.size() != o.keys_.size()) return false;
  if (std::memcmp(positions_.data(), o.positions_.data(), sizeof(int32_t) * length_) != 0) return false;
  const size_t bytes = sizeof(float) * static_cast<size_t>(length_) * kv_dim_;
  for (size_t l = 0; l < keys_.size(); ++l) {
    if (std::memcmp(keys_[l].data(), o.keys_[l].data(), bytes) != 0) return false;
    if (std::memcmp(values_[l].data(), o.values_[l].data(), bytes) != 0) return false;
  }
  return true;
}

}  // namespace specdec
