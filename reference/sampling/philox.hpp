#pragma once
// Philox4x32-10, the counter-based generator of Salmon, Moraes, Dror and Shaw, "Parallel random
// numbers: as easy as 1, 2, 3" (SC'11), exactly as Random123 defines it. A counter-based generator
// is a pure function of (counter, key), so every backend and thread count draws the same numbers
// for the same counters without sharing any state.
#include <array>
#include <cstdint>

namespace specdec {

// Round multipliers and Weyl key increments of Philox4x32 (Random123 PHILOX_M4x32_*, PHILOX_W32_*).
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
inline constexpr int kPhiloxRounds = 10;

// One block of Philox4x32-10: 4 output words for a 4-word counter and a 2-word key.
// Round r (r = 0..9) uses key + r·(W0, W1) (mod 2^32) and maps (c0, c1, c2, c3) to
//   (hi(M1·c2) ^ c1 ^ k0, lo(M1·c2), hi(M0·c0) ^ c3 ^ k1, lo(M0·c0))
// where hi/lo are the upper/lower 32 bits of the 64-bit product.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key);

}  // namespace specdec
