#include "reference/decoding/generation.hpp"

namespace specdec {

double GenerationResult::decode_tokens_per_second() const {
  if (tokens.size() < 2 || stats.decode_ns <= 0) return 0.0;
  return static_cast<double>(tokens.size() - 1) * 1e9 / static_cast<double>(stats.decode_ns);
}

}  // namespace specdec

namespace specdec {

double GenerationStats::acceptance_length() const {
  return steps > 0 ? static_cast<double>(emitted_in_steps) / steps : 0.0;
}

std::vector<double> GenerationStats::acceptance_by_depth() const {
  std::vector<double> a;
  for (size_t d = 0; d < depth_attempts.size(); ++d)
    a.push_back(depth_attempts[d] > 0 ? static_cast<double>(depth_accepts[d]) / depth_attempts[d] : 0.0);
  return a;
}

}  // namespace specdec
