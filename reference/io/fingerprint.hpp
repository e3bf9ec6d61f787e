#pragma once
// FNV-1a 64-bit hashing of tensors, to identify models in trace metadata. Not cryptographic: it
// tells models apart, it does not protect against deliberate collisions.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "reference/core/tensor.hpp"

namespace specdec {

class Fnv1a64 {
 public:
  void update(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) {
      hash_ ^= p[i];
      hash_ *= 0x100000001b3ull;
    }
  }
  // A u64 as 8 little-endian bytes, whatever the host.
  void update_u64(uint64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
    update(b, 8);
  }
  // Dimensions (rows, cols as u64), then the fp32 bytes in row-major order.
  void update(const Matrix& m) {
    update_u64(static_cast<uint64_t>(m.rows()));
    update_u64(static_cast<uint64_t>(m.cols()));
    update(m.data(), static_cast<std::size_t>(m.size()) * sizeof(float));
  }
  // Size (u64), then the fp32 bytes.
  void update(const Vector& v) {
    update_u64(static_cast<uint64_t>(v.size()));
    update(v.data(), static_cast<std::size_t>(v.size()) * sizeof(float));
  }
  uint64_t value() const { return hash_; }
  // "fnv1a64:<16 lower-case hex digits>"
  std::string str() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash_));
    return std::string("fnv1a64:") + buf;
  }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

}  // namespace specdec
