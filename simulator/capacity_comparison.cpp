#include "simulator/capacity_comparison.hpp"

#include <algorithm>

#include "reference/core/error.hpp"
#include "simulator/method.hpp"
#include "simulator/simulate_modes.hpp"

namespace specdec::sim {

std::string acceptance_source(const BuiltScenario& b) {
  if (!b.measured_note.empty()) return b.measured_note;
  if (b.scenario.acceptance) return b.scenario.acceptance->describe();
  return b.scenario.measured_tokens_per_step ? "measured AL " + std::to_string(*b.scenario.measured_tokens_per_step) : "";
}

CapacityComparison compare_capacity(const ScenarioOptions& o, const std::vector<std::string>& drafters,
                                    const SpecLibrary& specs, const OptionSpelling& sp) {
  if (!o.capacity) throw Error("comparing drafters is capacity planning: give " + sp("capacity-rate") + " and " + sp("tpot-target-ms"));
  if (drafters.size() < 2) throw Error(sp("drafter") + ": a comparison takes at least two drafters");
  for (size_t i = 0; i < drafters.size(); ++i)
    if (std::find(drafters.begin(), drafters.begin() + i, drafters[i]) != drafters.begin() + i)
      throw Error(sp("drafter") + ": '" + drafters[i] + "' is given twice");
  if (o.method) throw Error(sp("method") + " sets one method; with several drafters each drafter's own method is planned");
  CapacityComparison c;
  std::string reasons;
  for (const std::string& name : drafters) {
    DrafterCapacity d;
    d.drafter = name;
    ScenarioOptions one = o;
    one.drafter = name;
    try {
      d.built = simulate_modes(one, build_scenario(one, specs, sp), sp).built;
    } catch (const Error& e) {
      d.why_not = e.what();
    }
    // The load and targets are every drafter's: their errors are thrown, not kept per drafter.
    if (d.built) d.planning = run_capacity_planning(one, d.built->scenario, specs, sp);
    if (d.planning && !d.planning->search.best) d.why_not = "no configuration meets the targets within memory";
    if (!d.why_not.empty()) reasons += "\n  " + name + ": " + d.why_not;
    c.drafters.push_back(std::move(d));
  }
  for (size_t i = 0; i < c.drafters.size(); ++i) {
    const auto& p = c.drafters[i].planning;
    if (!p || !p->search.best) continue;
    if (!c.best || cheaper_config(*p->search.best, *c.drafters[*c.best].planning->search.best)) c.best = i;
  }
  if (std::none_of(c.drafters.begin(), c.drafters.end(), [](const DrafterCapacity& d) { return d.planning.has_value(); }))
    throw Error("no drafter could be planned:" + reasons);
  // One acceptance model given for several methods: each method's acceptance differs in fact.
  std::vector<Method> methods;
  for (const auto& d : c.drafters)
    if (d.built && std::find(methods.begin(), methods.end(), d.built->scenario.plan.method) == methods.end())
      methods.push_back(d.built->scenario.plan.method);
  bool given = false;
  for (const auto& d : c.drafters) given = given || (d.built && d.built->category.empty());
  if (given && methods.size() > 1)
    c.note = "one acceptance model was given for drafters of different methods, which accept differently; leave it out to "
             "compare each drafter on its spec's published acceptance";
  return c;
}

void capacity_comparison_json(const CapacityComparison& c, nlohmann::json& out) {
  out["capacity_by_drafter"] = nlohmann::json::array();
  for (const DrafterCapacity& d : c.drafters) {
    nlohmann::json e = {{"drafter", d.drafter}};
    if (d.built) {
      e["method"] = method_name(d.built->scenario.plan.method);
      e["acceptance"] = acceptance_source(*d.built);
    }
    if (d.planning && d.planning->search.best) {
      nlohmann::json plan;
      capacity_planning_json(*d.planning, d.built->scenario, plan);
      e["capacity"] = plan["capacity"];
    }
    if (!d.why_not.empty()) e["why_not"] = d.why_not;
    out["capacity_by_drafter"].push_back(e);
  }
  // The answer in full: the cheapest drafter's, else the first planned one's (its sequential plan).
  size_t shown = 0;
  if (c.best) {
    shown = *c.best;
  } else {
    while (!c.drafters[shown].planning) ++shown;
  }
  const DrafterCapacity& d = c.drafters[shown];
  capacity_planning_json(*d.planning, d.built->scenario, out);
  out["capacity_best_drafter"] = c.best ? nlohmann::json(d.drafter) : nlohmann::json(nullptr);
  if (!c.note.empty()) out["capacity_comparison_note"] = c.note;
  if (c.best) out["capacity"]["drafter"] = d.drafter;
}

}  // namespace specdec::sim
