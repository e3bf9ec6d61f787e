#include "reference/methods/method_spec.hpp"

#include <cmath>

#include "reference/core/error.hpp"
#include "reference/core/option_text.hpp"
#include "reference/core/suggest.hpp"
#include "reference/io/json_int.hpp"
#include "reference/policies/policy_spec.hpp"
#include "reference/methods/registry.hpp"

namespace specdec {

namespace {

// "eagle, eagle3 and peagle": the methods whose shapes include `takes`.
std::string methods_taking(bool ShapeSupport::*takes) {
  std::vector<std::string> names;
  for (const MethodEntry& e : method_registry())
    if (e.shapes.*takes) names.push_back(e.name);
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  return s;
}

const MethodParam* find_param(const MethodEntry& e, const std::string& key) {
  for (const MethodParam& p : e.params)
    if (p.name == key) return &p;
  return nullptr;
}

std::string param_names(const MethodEntry& e) {
  std::string s;
  for (const MethodParam& p : e.params) s += (s.empty() ? "" : ", ") + p.name;
  return s.empty() ? "none" : s;
}

std::string choice_list(const MethodParam& p) {
  std::string s;
  for (std::size_t i = 0; i < p.choices.size(); ++i) s += (i == 0 ? "" : i + 1 == p.choices.size() ? " or " : ", ") + p.choices[i];
  return s;
}

// "2" (a number's default), "checkpoint" (a choice's first): a value for the messages' examples.
std::string example_value(const MethodParam& p) {
  return p.is_choice() ? p.choices.front() : policy_number_text(p.default_value);
}

// Checks `v` against the parameter; the value in canonical form (integers as integers).
nlohmann::json checked_param(const MethodEntry& e, const MethodParam& p, const nlohmann::json& v) {
  const std::string where = "--method " + e.name + ": " + p.name;
  if (p.is_choice()) {
    if (v.is_string()) {
      for (const std::string& c : p.choices)
        if (c == v.get<std::string>()) return v;
    }
    const std::string near = v.is_string() ? closest_name(v.get<std::string>(), p.choices) : "";
    throw Error(where + " must be " + choice_list(p) + ", got " + (v.is_string() ? "'" + v.get<std::string>() + "'" : v.dump()) +
                (near.empty() ? "" : "; did you mean " + near + "?"));
  }
  const std::string range = "[" + policy_number_text(p.min) + ", " + policy_number_text(p.max) + "]";
  const bool number = v.is_number() && std::isfinite(v.get<double>());
  if (!number || v.get<double>() < p.min || v.get<double>() > p.max || (p.integer && v.get<double>() != std::floor(v.get<double>()))) {
    throw Error(where + " must be " + (p.integer ? "an integer" : "a number") + " in " + range + ", got " +
                (v.is_number() ? policy_number_text(v.get<double>()) : v.dump()));
  }
  if (p.integer) return static_cast<int64_t>(v.get<double>());
  return v.get<double>();
}

// The entry's parameters: those given (checked), the others at their defaults.
nlohmann::json complete_params(const MethodEntry& e, const nlohmann::json& given) {
  nlohmann::json out = nlohmann::json::object();
  for (const MethodParam& p : e.params) {
    out[p.name] = given.contains(p.name) ? checked_param(e, p, given[p.name]) : p.default_json();
  }
  return out;
}

}  // namespace

nlohmann::json MethodParam::default_json() const {
  if (is_choice()) return choices.front();
  if (integer) return static_cast<int64_t>(default_value);
  return default_value;
}

MethodSpec MethodSpec::normalized() const {
  const MethodSpec d;
  MethodSpec s;
  s.name = name;
  if (!method_entry(name).make_proposer) return s;  // sequential decoding has no shape
  s.tree = tree;
  if (tree == "chain") s.k = k;
  if (tree == "dynamic") s.depth = depth, s.tree_top_k = tree_top_k, s.total_tokens = total_tokens;
  if (tree == "chain" && method_entry(name).shapes.force_depth) s.force_depth = force_depth;
  s.params = complete_params(method_entry(name), params.is_object() ? params : nlohmann::json::object());
  return s;
}

nlohmann::json MethodSpec::to_json() const {
  const MethodSpec s = normalized();
  nlohmann::json j = {{"method", s.name}};
  if (!method_entry(s.name).make_proposer) return j;
  j["tree"] = s.tree;
  if (s.tree == "chain") j["k"] = s.k;
  if (s.tree == "dynamic") {
    j["depth"] = s.depth;
    j["tree_top_k"] = s.tree_top_k;
    j["total_tokens"] = s.total_tokens;
  }
  if (s.force_depth) j["force_depth"] = true;
  for (const auto& [key, value] : s.params.items()) j[key] = value;
  return j;
}

std::string MethodSpec::shape() const {
  const MethodEntry& e = method_entry(name);
  if (!e.make_proposer) return "";
  std::string s;
  if (tree == "chain") {
    s = "k=" + std::to_string(k);
  } else if (tree == "dynamic") {
    s = "tree=dynamic depth=" + std::to_string(depth) + " top_k=" + std::to_string(tree_top_k) +
        " total_tokens=" + std::to_string(total_tokens);
  } else {
    s = "tree=" + tree;  // a static tree's depth is its own (P-EAGLE's K included)
  }
  const nlohmann::json p = complete_params(e, params.is_object() ? params : nlohmann::json::object());
  for (const MethodParam& m : e.params) {
    if (p[m.name] == m.default_json()) continue;
    s += " " + m.name + "=" + (m.is_choice() ? p[m.name].get<std::string>() : policy_number_text(p[m.name].get<double>()));
  }
  return s;
}

std::string MethodSpec::label() const {
  const std::string s = shape();
  return s.empty() ? name : name + " " + s;
}

MethodSpec method_from_json(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw Error(where + ": expected a method object {\"method\": NAME, ...}, got " + j.dump());
  MethodSpec s;
  try {
    s.name = method_entry(j.at("method").get<std::string>(), where).name;
    if (j.contains("tree")) s.tree = j["tree"].get<std::string>();
    if (j.contains("k")) s.k = json_int32(j["k"], where + ".k");
    if (j.contains("depth")) s.depth = json_int32(j["depth"], where + ".depth");
    if (j.contains("tree_top_k")) s.tree_top_k = json_int32(j["tree_top_k"], where + ".tree_top_k");
    if (j.contains("total_tokens")) s.total_tokens = json_int32(j["total_tokens"], where + ".total_tokens");
    if (j.contains("force_depth")) s.force_depth = j["force_depth"].get<bool>();
    for (const MethodParam& p : method_entry(s.name).params)
      if (j.contains(p.name)) s.params[p.name] = j[p.name];
  } catch (const nlohmann::json::exception& e) {
    throw Error(where + ": " + e.what() + "; expected {\"method\": NAME, \"tree\": SHAPE, \"k\": K, ...}");
  }
  check_method_spec(s);
  return s.normalized();
}

void check_method_spec(const MethodSpec& s) {
  const MethodEntry& e = method_entry(s.name);
  if (e.name != s.name) {
    throw Error("--method '" + s.name + "' is spelled '" + e.name + "' inside specdec (parse it with canonical_method_name)");
  }
  if (!s.params.is_object()) throw Error("--method " + e.name + ": parameters must be an object, got " + s.params.dump());
  for (const auto& [key, value] : s.params.items()) {
    const MethodParam* p = find_param(e, key);
    if (!p) {
      std::vector<std::string> names;
      for (const MethodParam& m : e.params) names.push_back(m.name);
      const std::string near = closest_name(key, names);
      throw Error("--method " + e.name + " has no parameter '" + key + "'; its parameters: " + param_names(e) +
                  (near.empty() ? "" : "; did you mean " + near + "?"));
    }
    checked_param(e, *p, value);
  }
  if (!e.make_proposer) return;
  if (s.tree == "chain" && !e.shapes.chain) throw Error("--method " + e.name + " drafts a tree; give --tree");
  if (s.tree == "dynamic" && !e.shapes.dynamic_tree) {
    throw Error(e.shapes.static_tree ? "--tree dynamic is EAGLE-2's; " + e.title + " takes chain or a static tree"
                                     : "--tree dynamic applies to " + methods_taking(&ShapeSupport::dynamic_tree));
  }
  if (s.tree != "chain" && s.tree != "dynamic" && !e.shapes.static_tree) {
    throw Error("--method " + e.name + " drafts a chain; --tree applies to " + methods_taking(&ShapeSupport::static_tree));
  }
  if (s.k < 1) throw Error("--k must be >= 1 (got " + std::to_string(s.k) + ")");
  if (s.tree == "dynamic" && (s.depth < 1 || s.tree_top_k < 1 || s.total_tokens < 2)) {
    throw Error("dynamic tree: --depth and --tree-top-k must be >= 1 and --total-tokens >= 2");
  }
}

MethodSpec parse_method_text(const std::string& text, const std::string& where) {
  constexpr std::size_t kMaxText = 4096;
  if (text.size() > kMaxText) throw Error(where + ": the method text is longer than " + std::to_string(kMaxText) + " characters");
  const std::vector<std::string> parts = split_fields(text, ',');
  MethodSpec s;
  const MethodEntry& e = method_entry(parts[0], where);
  s.name = e.name;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::size_t eq = parts[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(where + ": '" + parts[i] + "' is not key=value (e.g. " + e.name + "," +
                  (e.params.empty() ? std::string("key=value") : e.params.front().name + "=" + example_value(e.params.front())) +
                  "); " + e.name + "'s parameters: " + param_names(e));
    }
    const std::string key = parts[i].substr(0, eq);
    const std::string value = parts[i].substr(eq + 1);
    if (s.params.contains(key)) throw Error(where + ": parameter " + key + " is given twice");
    const MethodParam* p = find_param(e, key);
    if (p && p->is_choice()) {
      s.params[key] = value;  // a named choice, checked below
    } else {
      s.params[key] = parse_finite_number(value, where + ": " + key);
    }
  }
  const MethodSpec checked_name = s;
  check_method_spec(checked_name);  // unknown keys and ranges, before any model loads
  return s;
}

}  // namespace specdec
