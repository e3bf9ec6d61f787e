#include "reference/sampling/philox.hpp"

namespace specdec {

namespace {

std::array<uint32_t, 4> philox_round(const std::array<uint32_t, 4>& c, const std::array<uint32_t, 2>& k) {
  const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * c[0];
  const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * c[2];
  const auto hi = [](uint64_t p) { return static_cast<uint32_t>(p >> 32); };
  const auto lo = [](uint64_t p) { return static_cast<uint32_t>(p); };
  return {hi(p1) ^ c[1] ^ k[0], lo(p1), hi(p0) ^ c[3] ^ k[1], lo(p0)};
}

}  // namespace

std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  for (int r = 0; r < kPhiloxRounds; ++r) {
    if (r > 0) {
      // Key schedule: bump by the Weyl constants before every round but the first.
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    ctr = philox_round(ctr, key);
  }
  return ctr;
}

}  // namespace specdec
