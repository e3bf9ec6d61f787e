#pragma once
// Keyed random stream on top of Philox4x32-10 (DESIGN.md: randomness is keyed by seed, sequence,
// absolute position and purpose). Every draw is a pure function of its counters, so sequential and
// speculative decoding, every backend and every thread count see the same numbers.
//
// Exact bit recipe (other backends, e.g. CUDA, must reproduce it bit for bit):
//   key     = { uint32(seed), uint32(seed >> 32) }                  (low word first)
//   counter = { sequence, position, uint32(purpose), index }
//   (w0, w1, w2, w3) = philox4x32_10(counter, key)                  (w2, w3 unused, reserved)
//   b       = (uint64(w0) << 21) | (w1 >> 11)                        53 random bits
//   uniform      = double(b) * 2^-53          in [0, 1 - 2^-53]      (exact in double)
//   uniform_open = double(b | 1) * 2^-53      in [2^-53, 1 - 2^-53] (exact; never 0 or 1)
//   gumbel(seed, sequence, position, token) =
//       -log(-log(uniform_open(seed, sequence, position, RandomPurpose::gumbel, token)))
//       in double precision with the platform's log. The uniform bits are exact everywhere; log
//       may differ by an ulp between libraries (glibc vs CUDA libdevice), so coupled-sampling
//       decisions can only differ across backends on near-ties of that size.
#include <array>
#include <cstdint>
#include <string>

namespace specdec {

// What a draw is for. The value is the third counter word; new purposes take new values (never
// reuse one), so streams of different purposes are disjoint.
enum class RandomPurpose : uint32_t {
  sample = 1,    // token sampling from a distribution (index 0)
  accept = 2,    // accept/reject test of speculative sampling (index = draft index)
  residual = 3,  // sampling from the residual distribution after a rejection
  gumbel = 4,    // Gumbel noise of coupled sampling (index = token id)
  tree = 5,      // tree drafting / tree verification choices
  draft = 6,     // drafter sampling (index = draft index)
  arrival = 7,   // request arrival times of a simulated workload (sequence 0, position = request index)
  forced = 8,    // forced acceptance for benchmarks (ForcedAcceptor; position = the draft's, index 0)
};

// "sample", "accept", ...; "purpose<N>" for values without a name.
std::string to_string(RandomPurpose purpose);

// The Philox key and counter of the recipe above.
std::array<uint32_t, 2> philox_key(uint64_t seed);
std::array<uint32_t, 4> philox_counter(uint32_t sequence, uint32_t position, RandomPurpose purpose,
                                       uint32_t index);

// The 53 random bits b of the recipe above.
uint64_t random_bits53(uint64_t seed, uint32_t sequence, uint32_t position, RandomPurpose purpose,
                       uint32_t index);

// Uniform in [0, 1) with 53 random bits.
double uniform(uint64_t seed, uint32_t sequence, uint32_t position, RandomPurpose purpose,
               uint32_t index);
// Uniform in (0, 1) (safe for log).
double uniform_open(uint64_t seed, uint32_t sequence, uint32_t position, RandomPurpose purpose,
                    uint32_t index);
// Standard Gumbel noise for one token at one position; finite, in about [-3.6, 36.8].
double gumbel(uint64_t seed, uint32_t sequence, uint32_t position, uint32_t token_id);

// One draw together with the counters that produced it, for recording into traces.
struct RandomDraw {
  uint64_t seed = 0;
  uint32_t sequence = 0;
  uint32_t position = 0;
  uint32_t purpose = 0;  // RandomPurpose value
  uint32_t index = 0;
  double value = 0.0;

  bool operator==(const RandomDraw&) const = default;
};

// uniform(...) / uniform_open(...) with their counters.
RandomDraw draw_uniform(uint64_t seed, uint32_t sequence, uint32_t position, RandomPurpose purpose,
                        uint32_t index);
RandomDraw draw_uniform_open(uint64_t seed, uint32_t sequence, uint32_t position,
                             RandomPurpose purpose, uint32_t index);

// The same stream with the seed bound, for code that draws many numbers under one seed.
class CounterRng {
 public:
  explicit CounterRng(uint64_t seed) : seed_(seed) {}

  uint64_t seed() const { return seed_; }

  double uniform(uint32_t sequence, uint32_t position, RandomPurpose purpose, uint32_t index = 0) const {
    return specdec::uniform(seed_, sequence, position, purpose, index);
  }
  double uniform_open(uint32_t sequence, uint32_t position, RandomPurpose purpose,
                      uint32_t index = 0) const {
    return specdec::uniform_open(seed_, sequence, position, purpose, index);
  }
  double gumbel(uint32_t sequence, uint32_t position, uint32_t token_id) const {
    return specdec::gumbel(seed_, sequence, position, token_id);
  }
  RandomDraw draw(uint32_t sequence, uint32_t position, RandomPurpose purpose, uint32_t index = 0) const {
    return draw_uniform(seed_, sequence, position, purpose, index);
  }

 private:
  uint64_t seed_;
};

}  // namespace specdec
