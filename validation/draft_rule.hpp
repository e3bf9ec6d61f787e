#pragma once
// A draft-free method's rule (n-gram lookup, suffix decoding: reference/drafting) applied to a
// recorded run: at every step, the drafts the rule gives for the history that step drafted after
// (the prompt and the tokens emitted by the earlier steps). Such a method's drafts are a function
// of the token history alone, so an outside engine's drafts are checked against the rule exactly,
// whatever its target computed (validate --candidate; docs/validation.md, "Draft-free methods").
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reference/decoding/generation.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/policies/speculation_policy.hpp"
#include "reference/sampling/sampling_params.hpp"
#include "traces/trace.hpp"

namespace specdec {
struct BatchedTrace;
}

namespace specdec::validation {

// What the rule drafts at one step of a recorded run.
struct RuleStep {
  Proposal proposal;     // the rule's drafts and where it copied them from; empty: nothing drafted
  bool plain = false;    // the speculation policy planned a plain step (depth 0): the rule was not asked
  int64_t history = 0;   // the length of the history drafted after (the step's position)
};

// The rule at every step of `trace` (index = step; step 0, the prefill, drafts nothing). One fresh
// proposer from `make_proposer` (the method's, with a run state of its own) is asked step by step
// as decoding asks it; with `make_policy`, a fresh speculation policy replayed on the recorded
// outcomes (accepted lengths, step times) sets each step's depth as it did in the run.
std::vector<RuleStep> rule_drafts(const Trace& trace, const std::function<std::unique_ptr<Proposer>()>& make_proposer,
                                  const std::function<std::unique_ptr<SpeculationPolicy>()>& make_policy,
                                  const GenerationOptions& options, const SamplingParams& sampling);

// A response of another sequence of a batch that had joined the run's shared state (suffix
// decoding's tree of earlier responses) when one sequence drafted its step `before_step`: the
// sequence finished in an earlier batch step. `request` is its place in the batch's request order
// (the id the shared state knows it by); `tokens` what its drafter had seen of its output (its
// output before its last step, the last history it drafted after).
struct EarlierResponse {
  int64_t request = 0;
  size_t before_step = 0;
  std::vector<int32_t> tokens;
};
// For sequence `index` of a batch (traces/batched_trace.hpp), the responses of the others in the
// order they joined, from the batch schedule: a sequence whose last step ran in batch step t joins
// before every step that runs in a later batch step.
std::vector<EarlierResponse> earlier_responses(const BatchedTrace& batch, size_t index);

// Where the rule found the draft of its first node, in the history (or an earlier response).
struct RuleMatch {
  bool found = false;          // the rule drafted something
  int32_t match_length = 0;    // n: the length of the matched suffix (n-gram)
  int64_t copied_from = -1;    // the first draft's index in the history (or in the response); -1 unknown
  int64_t match_position = -1; // where the earlier occurrence of the matched n-gram starts (copied_from − n)
  bool from_responses = false;
  int64_t request = -1;        // from_responses: the earlier request
};
RuleMatch rule_match(const Proposal& rule);

// The first draft node where the recorded drafts differ from the rule's (tokens or parents);
// nothing when they are equal.
std::optional<size_t> first_rule_difference(const Proposal& rule, const StepRecord& recorded);

// "[5 7 9]", with " (parents -1 0 0)" for a tree.
std::string draft_list(const std::vector<int32_t>& tokens, const std::vector<int32_t>& parents);

// How the rule found its drafts, in words, from the history it read: "the last 2 tokens [35 79]
// (positions 86-87) occurred at positions 12-13; it copies from position 14", "it finds no
// earlier occurrence of the last tokens and drafts nothing", "a plain step: ...".
std::string describe_rule(const RuleStep& rule, const std::vector<int32_t>& history);

// The history a step of `trace` drafted after: the prompt and the tokens of steps before `step`.
std::vector<int32_t> history_before(const Trace& trace, size_t step);

}  // namespace specdec::validation
