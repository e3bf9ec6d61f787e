#pragma once
// The host overheads every engine spec takes where it gives none of its own
// (simulator/specs/engine_defaults.json): a speculative step is never free of engine work just
// because no calibration measured it. An engine spec overrides a term by giving it, "default"
// included (the `ideal` engine gives 0 on purpose).
#include <nlohmann/json.hpp>
#include <string>

namespace specdec::sim {

// Checks a defaults file: an object whose "overhead" holds only the terms that may be defaulted
// (draft_step_s, spec_step_s: seconds, at most one, each a number; tree: {per_step_s, per_level_s,
// per_node_s}). Throws naming `source`.
void check_engine_defaults(const nlohmann::json& defaults, const std::string& source);

// `engine` (an engine spec's JSON) with every defaulted term it leaves out filled in from
// `defaults`: a method map (draft_step_s, spec_step_s) gains "default" when it has none (a bare
// number is the engine's own default and is kept); a tree field it leaves out is the shared one.
nlohmann::json with_engine_defaults(nlohmann::json engine, const nlohmann::json& defaults);

}  // namespace specdec::sim
