#pragma once
// The random choices an acceptance rule makes, behind an interface: in decoding they come from the
// keyed Philox stream (and are recorded for traces); in the exactness tests a scripted source walks
// every branch with its exact probability, so the acceptor's output distribution is computed, not
// estimated, by running the very same acceptance code.
#include <cstdint>
#include <vector>

#include "reference/sampling/counter_rng.hpp"

namespace specdec {

class Chance {
 public:
  virtual ~Chance() = default;
  // True with probability min(1, prob). `position`, `purpose`, `index` key the draw.
  virtual bool bernoulli(double prob, uint32_t position, RandomPurpose purpose, uint32_t index) = 0;
  // A token drawn from p (non-negative, sums to 1).
  virtual int categorical(const std::vector<double>& p, uint32_t position, RandomPurpose purpose, uint32_t index) = 0;
};

// Decoding's source: u = uniform(seed, sequence, position, purpose, index); bernoulli is u < prob,
// categorical is sample_from(p, u). Every uniform is kept, in draw order, for the trace.
class PhiloxChance final : public Chance {
 public:
  PhiloxChance(uint64_t seed, uint32_t sequence) : seed_(seed), sequence_(sequence) {}
  bool bernoulli(double prob, uint32_t position, RandomPurpose purpose, uint32_t index) override;
  int categorical(const std::vector<double>& p, uint32_t position, RandomPurpose purpose, uint32_t index) override;
  const std::vector<RandomDraw>& draws() const { return draws_; }

 private:
  uint64_t seed_;
  uint32_t sequence_;
  std::vector<RandomDraw> draws_;
};

}  // namespace specdec
