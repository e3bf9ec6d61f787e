#include "reference/acceptance/chance.hpp"

#include "reference/sampling/sampler.hpp"

namespace specdec {

bool PhiloxChance::bernoulli(double prob, uint32_t position, RandomPurpose purpose, uint32_t index) {
  draws_.push_back(draw_uniform(seed_, sequence_, position, purpose, index));
  return draws_.back().value < prob;
}

int PhiloxChance::categorical(const std::vector<double>& p, uint32_t position, RandomPurpose purpose, uint32_t index) {
  draws_.push_back(draw_uniform(seed_, sequence_, position, purpose, index));
  return sample_from(p, draws_.back().value);
}

}  // namespace specdec
