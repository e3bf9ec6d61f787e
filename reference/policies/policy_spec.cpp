#include "reference/policies/policy_spec.hpp"

#include <cmath>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/option_text.hpp"
#include "reference/core/suggest.hpp"
#include "reference/policies/registry.hpp"

namespace specdec {

namespace {

constexpr std::size_t kMaxPolicyText = 4096;
constexpr std::size_t kMaxListItems = 256;

// The text form of one parameter's value, as JSON of the parameter's kind.
nlohmann::json parse_value(const PolicyParam& p, const std::string& text, const std::string& where) {
  switch (p.kind) {
    case PolicyParam::Kind::number:
    case PolicyParam::Kind::integer: return parse_finite_number(text, where);
    case PolicyParam::Kind::list: {
      nlohmann::json a = nlohmann::json::array();
      for (const std::string& item : split_fields(text, '/')) a.push_back(parse_finite_number(item, where));
      return a;
    }
    case PolicyParam::Kind::schedule: {
      nlohmann::json a = nlohmann::json::array();
      for (const std::string& item : split_fields(text, '/')) {
        const std::vector<std::string> kv = split_fields(item, ':');
        if (kv.size() != 2) throw Error(where + ": '" + item + "' is not BATCH:DEPTH (e.g. 1:4/8:2/32:0)");
        a.push_back({parse_finite_number(kv[0], where), parse_finite_number(kv[1], where)});
      }
      return a;
    }
  }
  return nullptr;
}

}  // namespace

std::string policy_number_text(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

namespace {

std::string number_text(double v) { return policy_number_text(v); }

std::string value_text(const nlohmann::json& v) { return v.is_number() ? number_text(v.get<double>()) : v.dump(); }

std::string range(const PolicyParam& p) { return "[" + number_text(p.min) + ", " + number_text(p.max) + "]"; }

void check_integer(const nlohmann::json& v, const PolicyParam& p, const std::string& where) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() != std::floor(v.get<double>()) ||
      v.get<double>() < p.min || v.get<double>() > p.max) {
    throw Error(where + ": expected an integer in " + range(p) + ", got " + value_text(v));
  }
}

// Checks one value against its parameter; returns it in canonical form (integers as integers).
nlohmann::json checked_value(const PolicyParam& p, const nlohmann::json& v, const std::string& where) {
  switch (p.kind) {
    case PolicyParam::Kind::number:
      if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < p.min || v.get<double>() > p.max) {
        throw Error(where + ": expected a number in " + range(p) + ", got " + value_text(v));
      }
      return v.get<double>();
    case PolicyParam::Kind::integer:
      check_integer(v, p, where);
      return static_cast<int64_t>(v.get<double>());
    case PolicyParam::Kind::list: {
      if (!v.is_array() || v.empty() || v.size() > kMaxListItems) {
        throw Error(where + ": expected a list of 1 to " + std::to_string(kMaxListItems) + " integers (e.g. 1/3/7)");
      }
      nlohmann::json out = nlohmann::json::array();
      for (const auto& x : v) {
        check_integer(x, p, where);
        const auto i = static_cast<int64_t>(x.get<double>());
        if (p.increasing && !out.empty() && i <= out.back().get<int64_t>()) throw Error(where + ": the list must be strictly increasing, got " + v.dump());
        out.push_back(i);
      }
      return out;
    }
    case PolicyParam::Kind::schedule: {
      if (!v.is_array() || v.empty() || v.size() > kMaxListItems) {
        throw Error(where + ": expected 1 to " + std::to_string(kMaxListItems) + " BATCH:DEPTH entries (e.g. 1:4/8:2/32:0)");
      }
      nlohmann::json out = nlohmann::json::array();
      for (const auto& e : v) {
        if (!e.is_array() || e.size() != 2) throw Error(where + ": each entry must be [batch size, depth], got " + e.dump());
        const PolicyParam batch = policy_param("batch size", PolicyParam::Kind::integer, nullptr, 1, 1 << 20, "");
        check_integer(e[0], batch, where + " batch size");
        check_integer(e[1], p, where + " depth");
        const auto b = static_cast<int64_t>(e[0].get<double>());
        if (!out.empty() && b <= out.back()[0].get<int64_t>()) {
          throw Error(where + ": batch sizes must be strictly increasing, got " + v.dump());
        }
        out.push_back({b, static_cast<int64_t>(e[1].get<double>())});
      }
      return out;
    }
  }
  return v;
}

std::vector<std::string> param_names(const PolicyEntry& e) {
  std::vector<std::string> names;
  for (const PolicyParam& p : e.params) names.push_back(p.name);
  return names;
}

const PolicyParam& find_param(const PolicyEntry& e, const std::string& key, const std::string& where) {
  for (const PolicyParam& p : e.params)
    if (p.name == key) return p;
  std::string known;
  for (const PolicyParam& p : e.params) known += (known.empty() ? "" : ", ") + p.name;
  const std::string near = closest_name(key, param_names(e));
  throw Error(where + ": policy " + e.name + " has no parameter '" + key + "'; " +
              (known.empty() ? "it takes none" : "its parameters: " + known) + (near.empty() ? "" : "; did you mean " + near + "?"));
}

}  // namespace

PolicySpec normalized(const PolicySpec& spec, const std::string& where) {
  const PolicyEntry& e = policy_entry(spec.name, where);
  if (!spec.params.is_object()) throw Error(where + ": policy parameters must be an object");
  PolicySpec out;
  out.name = e.name;
  for (const auto& [key, value] : spec.params.items()) find_param(e, key, where);
  for (const PolicyParam& p : e.params) {
    const auto it = spec.params.find(p.name);
    const nlohmann::json& v = it == spec.params.end() ? p.default_value : *it;
    out.params[p.name] = checked_value(p, v, where + ": policy " + e.name + " parameter " + p.name);
  }
  if (e.check) {
    try {
      e.check(out.params);
    } catch (const Error& err) {
      throw Error(where + ": policy " + e.name + ": " + err.what());
    }
  }
  return out;
}

PolicySpec parse_policy_spec(const std::string& text, const std::string& where) {
  if (text.size() > kMaxPolicyText) throw Error(where + ": the policy text is longer than " + std::to_string(kMaxPolicyText) + " characters");
  const std::vector<std::string> parts = split_fields(text, ',');
  PolicySpec spec;
  spec.name = parts[0];
  const PolicyEntry& e = policy_entry(spec.name, where);
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::size_t eq = parts[i].find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(where + ": '" + parts[i] + "' is not KEY=VALUE (the form is NAME[,KEY=VALUE...], e.g. hf-heuristic,start=5)");
    }
    const std::string key = parts[i].substr(0, eq);
    const PolicyParam& p = find_param(e, key, where);
    if (spec.params.contains(key)) throw Error(where + ": parameter " + key + " is given twice");
    spec.params[key] = parse_value(p, parts[i].substr(eq + 1), where + ": policy " + e.name + " parameter " + key);
  }
  return normalized(spec, where);
}

PolicySpec policy_from_json(const nlohmann::json& j, const std::string& where) {
  PolicySpec spec;
  if (j.is_string()) {
    spec.name = j.get<std::string>();
    return normalized(spec, where);
  }
  if (!j.is_object() || !j.contains("policy") || !j["policy"].is_string()) {
    throw Error(where + ": a policy is a name or an object {\"policy\": NAME, ...parameters}");
  }
  spec.name = j["policy"].get<std::string>();
  for (const auto& [key, value] : j.items())
    if (key != "policy") spec.params[key] = value;
  return normalized(spec, where);
}

nlohmann::json PolicySpec::to_json() const {
  nlohmann::json j = {{"policy", name}};
  for (const auto& [key, value] : params.items()) j[key] = value;
  return j;
}

std::string PolicySpec::label() const {
  std::string s = name;
  const nlohmann::json defaults = normalized(PolicySpec{name, nlohmann::json::object()}, "policy").params;
  for (const auto& [key, value] : params.items()) {
    if (defaults.contains(key) && defaults[key] == value) continue;  // the label names what differs
    std::string v;
    if (value.is_array()) {
      for (const auto& x : value) {
        v += v.empty() ? "" : "/";
        v += x.is_array() ? x[0].dump() + ":" + x[1].dump() : x.dump();
      }
    } else {
      v = value.dump();
    }
    s += "," + key + "=" + v;
  }
  return s;
}

}  // namespace specdec
