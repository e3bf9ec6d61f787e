#pragma once
// Capacity planning across methods: several drafters (each a method with its head, draft model or
// lookup) planned for one load, each over TP × layout × K × batch as simulator/capacity_planning plans one,
// and the cheapest of them — fewest devices, then the lowest TPOT — beside sequential decoding.
// `specdec simulate --capacity-rate R --tpot-target-ms T --drafter A,B,...` and Python's
// specdec.plan_capacity(drafter=[A, B, ...]).
//
// Each drafter takes the acceptance the options give (the same for all: --alpha 0.75 is then
// everyone's α, which only fits drafters of one kind) or, when none is given, its spec's published
// default, so a mix of methods is compared on each one's own published numbers. A drafter that
// cannot be planned as asked (no acceptance, a method the engine does not run, a head for another
// model) is kept with its reason; an error in the load or targets is every drafter's and is thrown.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "simulator/capacity_planning.hpp"

namespace specdec::sim {

struct DrafterCapacity {
  std::string drafter;                    // as given
  std::optional<BuiltScenario> built;     // its scenario (absent when it could not be built)
  std::optional<CapacityPlanning> planning;
  std::string why_not;                    // set when it could not be planned
};

struct CapacityComparison {
  std::vector<DrafterCapacity> drafters;  // in the order given
  std::optional<size_t> best;             // the cheapest feasible plan's index
  // Set when one acceptance model was given for drafters of different methods: what it means.
  std::string note;
};

// Plans every drafter of `drafters` (at least two, each once) for `o.capacity` (which must be set)
// with the rest of `o` as given. Throws when none can be planned, saying why for each.
CapacityComparison compare_capacity(const ScenarioOptions& o, const std::vector<std::string>& drafters,
                                    const SpecLibrary& specs, const OptionSpelling& spelling);

// Where a built scenario's acceptance came from: a category's measured note, the acceptance
// model's description, or its measured AL.
std::string acceptance_source(const BuiltScenario& b);

// "capacity_by_drafter": one entry per drafter (drafter, method, acceptance, and its cheapest
// configuration or why_not), "capacity_best_drafter", "capacity_comparison_note" (when the note is
// set), and the cheapest drafter's plan as
// capacity_planning_json writes it (its "capacity" naming the drafter).
void capacity_comparison_json(const CapacityComparison& c, nlohmann::json& out);

}  // namespace specdec::sim
