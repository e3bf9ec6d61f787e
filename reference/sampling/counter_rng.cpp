#include "reference/sampling/counter_rng.hpp"

#include <cmath>

#include "reference/sampling/philox.hpp"

namespace specdec {

namespace {

constexpr double kTwoPowMinus53 = 1.0 / 9007199254740992.0;  // 2^-53, exact

}  // namespace

std::string to_string(RandomPurpose purpose) {
  switch (purpose) {
    case RandomPurpose::sample: return "sample";
    case RandomPurpose::accept: return "accept";
    case RandomPurpose::residual: return "residual";
    case RandomPurpose::gumbel: return "gumbel";
    case RandomPurpose::tree: return "tree";
    case RandomPurpose::draft: return "draft";
    case RandomPurpose::arrival: return "arrival";
    case RandomPurpose::forced: return "forced";
  }
  return "purpose" + std::to_string(static_cast<uint32_t>(purpose));
}

std::array<uint32_t, 2> philox_key(uint64_t seed) {
  return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

std::array<uint32_t, 4> philox_counter(uint32_t sequence, uint32_t position, RandomPurpose purpose,
                                       uint32_t index) {
  return {sequence, position, static_cast<uint32_t>(purpose), index};
}

uint64_t random_bits53(uint64_t seed, uint32_t sequence, uint32_t position, RandomPurpose purpose,
                       uint32_t index) {
  const std::array<uint32_t, 4> w =
      philox4x32_10(philox_counter(sequence, position, purpose, index), philox_key(seed));
  return (static_cast<uint64_t>(w[0]) << 21) | (w[1] >> 11);
}

double uniform(uint64_t seed, uint32_t sequence, uint32_t position, RandomPurpose purpose,
               uint32_t index) {
  return static_cast<double>(random_bits53(seed, sequence, position, purpose, index)) * kTwoPowMinus53;
}

double uniform_open(uint64_t seed, uint32_t sequence, uint32_t position, RandomPurpose purpose,
                    uint32_t index) {
  // Forcing the lowest bit to 1 moves 0 to 2^-53 and keeps every value below 1, exactly.
  const uint64_t b = random_bits53(seed, sequence, position, purpose, index) | 1u;
  return static_cast<double>(b) * kTwoPowMinus53;
}

double gumbel(uint64_t seed, uint32_t sequence, uint32_t position, uint32_t token_id) {
  const double u = uniform_open(seed, sequence, position, RandomPurpose::gumbel, token_id);
  return -std::log(-std::log(u));
}

RandomDraw draw_uniform(uint64_t seed, uint32_t sequence, uint32_t position, RandomPurpose purpose,
                        uint32_t index) {
  return {seed, sequence, position, static_cast<uint32_t>(purpose), index,
          uniform(seed, sequence, position, purpose, index)};
}

RandomDraw draw_uniform_open(uint64_t seed, uint32_t sequence, uint32_t position,
                             RandomPurpose purpose, uint32_t index) {
  return {seed, sequence, position, static_cast<uint32_t>(purpose), index,
          uniform_open(seed, sequence, position, purpose, index)};
}

}  // namespace specdec
