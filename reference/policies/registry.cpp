#include "reference/policies/registry.hpp"

#include "reference/core/error.hpp"
#include "reference/core/suggest.hpp"
#include "reference/policies/entries.hpp"

namespace specdec {

const std::vector<PolicyEntry>& policy_registry() {
  static const std::vector<PolicyEntry> table = {
      policies::fixed(),      policies::schedule(),   policies::hf_heuristic(), policies::hf_confidence(),
      policies::p_min(),      policies::specdec_pp(), policies::sglang_ema(),   policies::trtllm(),
      policies::vllm_batch(), policies::goodput()};
  return table;
}

std::vector<std::string> policy_names() {
  std::vector<std::string> names;
  for (const PolicyEntry& e : policy_registry()) names.push_back(e.name);
  return names;
}

std::string known_policies() {
  std::string s;
  for (const PolicyEntry& e : policy_registry()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

const PolicyEntry& policy_entry(const std::string& name, const std::string& what) {
  for (const PolicyEntry& e : policy_registry())
    if (e.name == name) return e;
  const std::string near = closest_name(name, policy_names());
  throw Error((what.empty() ? "" : what + ": ") + "unknown policy '" + name + "'; known policies: " + known_policies() +
              (near.empty() ? "" : "; did you mean " + near + "?"));
}

std::unique_ptr<SpeculationPolicy> make_policy(const PolicySpec& spec) {
  const PolicySpec n = normalized(spec, "policy");
  return policy_entry(n.name).make(n.params);
}

PolicyParam policy_param(const std::string& name, PolicyParam::Kind kind, nlohmann::json default_value, double min,
                         double max, const std::string& doc) {
  PolicyParam p;
  p.name = name;
  p.kind = kind;
  p.default_value = std::move(default_value);
  p.min = min;
  p.max = max;
  p.doc = doc;
  return p;
}

double policy_number(const nlohmann::json& params, const std::string& name) { return params.at(name).get<double>(); }

std::vector<int> policy_list(const nlohmann::json& params, const std::string& name) {
  return params.at(name).get<std::vector<int>>();
}

int scheduled_depth(const nlohmann::json& schedule, int batch_size) {
  int depth = schedule.at(0).at(1).get<int>();
  for (const auto& entry : schedule)
    if (entry.at(0).get<int>() <= batch_size) depth = entry.at(1).get<int>();
  return depth;
}

}  // namespace specdec
