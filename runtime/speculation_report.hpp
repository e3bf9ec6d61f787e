#pragma once
// How a run's speculation is reported by every command (generate, compare, record, batch, the
// Python module): the policy, the mean draft depth and the drafters switched off, as text lines
// and as JSON fields.
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/decoding/generation.hpp"
#include "reference/policies/policy_spec.hpp"

namespace specdec {

// {"step", "drafter", "reason", "next"}.
nlohmann::json to_json(const DrafterFallback& f);
nlohmann::json fallbacks_json(const std::vector<DrafterFallback>& fallbacks);
// "drafter eagle switched off at step 2 (failed: injected fault); then draft".
std::string fallback_text(const DrafterFallback& f);

// Adds "policy" (spec.to_json()), "mean_draft_depth", "draft_depth_per_step" and "fallbacks" to `j`.
void add_speculation_json(nlohmann::json& j, const PolicySpec& policy, const GenerationResult& r);

// Text lines, each starting with a label padded to `label_width`: "policy" (only when not fixed),
// "depth" (mean draft depth and the steps by depth; speculative runs only) and one "fallback"
// line per drafter switched off.
void print_speculation(std::ostream& out, const PolicySpec& policy, const GenerationResult& r, bool speculative,
                       int label_width = 9);

}  // namespace specdec
