#include "reference/decoding/generation.hpp"

#include <algorithm>
#include <string>

#include "reference/core/error.hpp"

namespace specdec {

int checked_capacity(std::size_t prompt_len, int max_new_tokens, int headroom, int context) {
  if (prompt_len == 0) throw Error("generate: the prompt is empty; at least one token is needed");
  if (max_new_tokens < 0) throw Error("generate: max_new_tokens must be >= 0 (got " + std::to_string(max_new_tokens) + ")");
  if (headroom < 0) throw Error("generate: internal error: negative cache headroom");
  const int64_t sequence = static_cast<int64_t>(std::min<std::size_t>(prompt_len, kMaxPositions + 1)) + max_new_tokens;
  if (context > 0 && sequence > context) {
    throw Error("generate: the prompt (" + std::to_string(prompt_len) + " tokens) plus max_new_tokens (" +
                std::to_string(max_new_tokens) + ") needs " + std::to_string(sequence) +
                " positions, but the model's context length is " + std::to_string(context) +
                " (max_position_embeddings in its config.json); lower --max-new-tokens or shorten the prompt");
  }
  const int64_t total = sequence + headroom;
  if (total > kMaxPositions) {
    throw Error("generate: the prompt (" + std::to_string(prompt_len) + " tokens) plus max_new_tokens (" +
                std::to_string(max_new_tokens) + ") and draft headroom (" + std::to_string(headroom) + ") is " +
                std::to_string(total) + " positions, more than specdec supports (" + std::to_string(kMaxPositions) + ")");
  }
  return static_cast<int>(total);
}

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

double GenerationStats::mean_draft_depth() const {
  double steps_seen = 0, depth_sum = 0;
  for (std::size_t d = 0; d < draft_depth_per_step.size(); ++d) {
    steps_seen += draft_depth_per_step[d];
    depth_sum += static_cast<double>(d) * draft_depth_per_step[d];
  }
  return steps_seen > 0 ? depth_sum / steps_seen : 0.0;
}

}  // namespace specdec
