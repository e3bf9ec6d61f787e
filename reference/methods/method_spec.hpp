#pragma once
// A decoding method as one value: its registry name and its drafting shape. The one form every
// consumer uses: the command line's options, sweep cells, trace run configs, the Python module and
// the simulator's plans all hold a MethodSpec and read it as JSON with to_json / method_from_json.
#include <string>

#include <nlohmann/json.hpp>

namespace specdec {

struct MethodSpec {
  std::string name = "sequential";  // a registry name (registry.hpp), never an alias
  int k = 4;                        // chain length K; P-EAGLE's parallel depth
  std::string tree = "chain";       // chain | dynamic | mc_sim_7b_63 | JSON paths (inline or a file)
  int depth = 7;                    // dynamic tree: expansion depth
  int tree_top_k = 10;              // dynamic tree: children kept per node and frontier width
  int total_tokens = 60;            // dynamic tree: tokens verified per step (draft nodes + 1)
  bool force_depth = false;         // K beyond a head's trained depth
  // The method's own parameters (its registry entry's MethodParam list: n-gram sizes, suffix
  // decoding's budget), complete once normalized; keys of the to_json object beside "k".
  nlohmann::json params = nlohmann::json::object();

  // The options the method and its shape use, others at their defaults: equal runs compare equal.
  MethodSpec normalized() const;
  // {"method": name} plus the options the shape uses (normalized): the form of --json output,
  // trace run configs, sweep keys and simulator plans.
  nlohmann::json to_json() const;
  // "k=4", "tree=dynamic depth=7 top_k=10 total_tokens=60", "tree=mc_sim_7b_63", "" (sequential);
  // parameters away from their defaults follow: "k=4 n_min=2".
  std::string shape() const;
  // "eagle3 k=4", "sequential".
  std::string label() const;

  bool operator==(const MethodSpec&) const = default;
};

// The inverse of to_json: aliases resolved, numbers range-checked (a trace may come from another
// engine), the spec checked. Throws specdec::Error naming `where` and the field.
MethodSpec method_from_json(const nlohmann::json& j, const std::string& where);

// The text form of --method: "NAME[,key=value...]" (an alias names its method), e.g.
// "ngram,n_min=2,n_max=4". Only the name and the parameters are set; the parameters are checked
// against the entry. Throws specdec::Error naming `where`, the parameter and its range.
MethodSpec parse_method_text(const std::string& text, const std::string& where = "--method");

// Checks the name (aliases are refused here: parse them with canonical_method_name first) and the
// shape options against what the method takes; messages name the command-line options (--k,
// --tree, ...). Throws specdec::Error.
void check_method_spec(const MethodSpec& spec);

}  // namespace specdec
