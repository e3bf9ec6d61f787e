#pragma once
// The speculation policies, as data: one entry per policy (one file each beside this one) naming
// it, its source (the engine or paper whose rule it reproduces), its parameters with their defaults
// and ranges, and how a per-sequence policy object is made. --policy, sweeps, run configs, the
// Python module, the simulator and docs read this table; adding a policy is its file, its entry
// and a row in tests/reference/test_policies.cpp.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/policies/policy_spec.hpp"
#include "reference/policies/speculation_policy.hpp"

namespace specdec {

struct PolicyParam {
  enum class Kind {
    number,    // a finite number in [min, max]
    integer,   // an integer in [min, max]
    list,      // integers in [min, max] ("1/3/7"), strictly increasing when `increasing`
    schedule,  // [[batch size, depth], ...] by increasing batch size ("1:4/8:2/32:0"); depths in [min, max]
  };
  std::string name;
  Kind kind = Kind::number;
  nlohmann::json default_value;
  double min = 0, max = 0;
  bool increasing = true;  // list
  std::string doc;  // what it is, and its source's name for it
};

struct PolicyEntry {
  std::string name;     // in every command, file and column
  std::string title;    // "Hugging Face heuristic"
  std::string summary;  // one line: the rule
  std::string source;   // where the rule and its defaults come from
  std::vector<PolicyParam> params;
  // Checks between parameters beyond each one's range (null: none); throws specdec::Error.
  void (*check)(const nlohmann::json& params) = nullptr;
  // A fresh policy for one sequence; `params` is complete and checked.
  std::unique_ptr<SpeculationPolicy> (*make)(const nlohmann::json& params) = nullptr;
};

// Every policy, in the order commands list them ("fixed" first: the default).
const std::vector<PolicyEntry>& policy_registry();
std::vector<std::string> policy_names();
// "fixed, schedule, hf-heuristic, ...".
std::string known_policies();
// Throws specdec::Error "`what`: unknown policy 'hf-heuristc'; known policies: ...; did you mean hf-heuristic?".
const PolicyEntry& policy_entry(const std::string& name, const std::string& what = "--policy");
// A fresh per-sequence policy for `spec` (normalized here).
std::unique_ptr<SpeculationPolicy> make_policy(const PolicySpec& spec);

// A parameter of an entry's table.
PolicyParam policy_param(const std::string& name, PolicyParam::Kind kind, nlohmann::json default_value, double min,
                         double max, const std::string& doc);

// Reads parameter `name` of a complete parameter object (for the policies' make functions).
double policy_number(const nlohmann::json& params, const std::string& name);
std::vector<int> policy_list(const nlohmann::json& params, const std::string& name);
// The depth a schedule gives at `batch_size`: the entry with the largest batch size ≤ it (the first
// entry below every listed size).
int scheduled_depth(const nlohmann::json& schedule, int batch_size);

}  // namespace specdec
