#pragma once
// Searching draft configurations for the lowest TPOT: chain lengths K (P-EAGLE: its parallel
// depth) and EAGLE-2 dynamic-tree settings. Only what the acceptance data answers is evaluated;
// every setting it cannot answer is listed with the reason, never extrapolated.
#include <string>
#include <vector>

#include "simulator/predictor.hpp"

namespace specdec::sim {

struct SkippedSetting {
  std::string setting;  // e.g. "K = 6" or "total 60, depth 7, top-k 10"
  std::string reason;
};

struct BestK {
  int k = 0;
  Prediction best;
  std::vector<Prediction> all;          // the evaluated K, ascending
  std::vector<SkippedSetting> skipped;  // the K not evaluated
};
// Why chain length K cannot be evaluated for the scenario ("" when it can): the acceptance model
// has no AL that deep, P-EAGLE's trained depth, Medusa's head count. Never extrapolated.
std::string why_k_is_not_evaluated(Scenario s, int k);

// Evaluates each K in `ks` (chain drafting; duplicates once) that the acceptance model answers
// and the drafter allows (P-EAGLE's trained depth), and returns the one with the lowest TPOT.
// Throws when K < 1 is asked for, or when no K can be evaluated (saying what the data covers).
BestK best_k(Scenario s, std::vector<int> ks);

struct DynamicTreeSetting {
  int total_tokens = 0;  // verified tokens, root included
  int depth = 0;
  int top_k = 0;
};
struct TreeCandidate {
  DynamicTreeSetting setting;
  Prediction prediction;
};
struct BestTree {
  DynamicTreeSetting setting;
  TreeShape tree;  // the best setting's tree
  Prediction best;
  std::vector<TreeCandidate> all;       // every evaluated combination, in grid order
  std::vector<SkippedSetting> skipped;  // depths the acceptance model does not answer
};
// Evaluates every combination of the three lists as an EAGLE-2 tree (best_tree under the
// scenario's acceptance model) and returns the one with the lowest TPOT. Combinations deeper than
// the acceptance model answers are skipped; throws when none is left or a value is out of range.
BestTree best_dynamic_tree(Scenario s, const std::vector<int>& total_tokens, const std::vector<int>& depths,
                           const std::vector<int>& top_ks);

}  // namespace specdec::sim
