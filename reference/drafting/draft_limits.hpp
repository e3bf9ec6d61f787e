#pragma once
// Upper bounds on what one speculative step may draft. Published methods draft K <= 8 chains and
// trees of at most a few hundred nodes (EAGLE-2: 60 tokens; Medusa/EAGLE static trees: 26-64);
// a step drafts, verifies and stores all its nodes at once, so unbounded values would only run
// for minutes or exhaust memory. Every proposer and the tree parser check them.
#include <string>

#include "reference/core/error.hpp"

namespace specdec {

inline constexpr int kMaxDraftDepth = 64;    // K of a chain; depth of any tree
inline constexpr int kMaxDraftNodes = 1024;  // draft nodes verified in one step (tree size, total tokens - 1)
inline constexpr int kMaxDraftTopK = 64;     // EAGLE-2's children per node and frontier width

// Throws "<who>: <what> is <value>, more than specdec supports (<limit>)".
inline void check_draft_limit(const std::string& who, const std::string& what, long long value, int limit) {
  if (value > limit) {
    throw Error(who + ": " + what + " is " + std::to_string(value) + ", more than specdec supports (" +
                std::to_string(limit) + "); see reference/drafting/draft_limits.hpp");
  }
}

}  // namespace specdec
