#include "reference/decoding/generation.hpp"

namespace specdec {

double GenerationResult::decode_tokens_per_second() const {
  if (tokens.size() < 2 || stats.decode_ns <= 0) return 0.0;
  return static_cast<double>(tokens.size() - 1) * 1e9 / static_cast<double>(stats.decode_ns);
}

}  // namespace specdec
