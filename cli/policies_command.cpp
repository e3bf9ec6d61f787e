// specdec policies: the speculation policy registry (reference/policies) as a table or JSON —
// every policy --policy accepts, the rule it applies, where the rule comes from and its
// parameters with their defaults and ranges (docs/policies.md explains the rules).
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "cli/options.hpp"
#include "reference/policies/registry.hpp"

namespace specdec::cli {

namespace {

const char* kind_name(PolicyParam::Kind k) {
  switch (k) {
    case PolicyParam::Kind::number: return "number";
    case PolicyParam::Kind::integer: return "integer";
    case PolicyParam::Kind::list: return "list";
    case PolicyParam::Kind::schedule: return "schedule";
  }
  return "number";
}

std::string number_text(double v) { return policy_number_text(v); }

// The default as --policy takes it: lists as 1/3/7, schedules as 1:4/8:2.
std::string default_text(const PolicyParam& p) {
  const nlohmann::json& d = p.default_value;
  if (p.kind == PolicyParam::Kind::list && d.is_array()) {
    std::string s;
    for (const auto& x : d) s += (s.empty() ? "" : "/") + x.dump();
    return s;
  }
  if (p.kind == PolicyParam::Kind::schedule && d.is_array()) {
    std::string s;
    for (const auto& x : d) s += (s.empty() ? "" : "/") + x.at(0).dump() + ":" + x.at(1).dump();
    return s;
  }
  return d.is_number() ? number_text(d.get<double>()) : d.dump();
}

std::string range_text(const PolicyParam& p) {
  const std::string r = "[" + number_text(p.min) + ", " + number_text(p.max) + "]";
  switch (p.kind) {
    case PolicyParam::Kind::list: return "integers in " + r + (p.increasing ? ", increasing" : "");
    case PolicyParam::Kind::schedule: return "batch size:depth pairs, depths in " + r;
    case PolicyParam::Kind::integer: return "integer in " + r;
    case PolicyParam::Kind::number: return r;
  }
  return r;
}

}  // namespace

int run_policies(const std::vector<std::string>& args, CommandIO& io) {
  bool json = false;
  po::options_description desc("policies options");
  desc.add_options()("json", po::bool_switch(&json), "print one JSON object instead of a table");
  if (!parse_options(args, desc, io, "specdec policies [--json]")) return 0;
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const PolicyEntry& e : policy_registry()) {
      nlohmann::json params = nlohmann::json::array();
      for (const PolicyParam& p : e.params) {
        nlohmann::json q = {{"name", p.name}, {"kind", kind_name(p.kind)}, {"default", p.default_value},
                            {"min", p.min}, {"max", p.max}, {"doc", p.doc}};
        if (p.kind == PolicyParam::Kind::list) q["increasing"] = p.increasing;
        params.push_back(q);
      }
      out.push_back({{"name", e.name}, {"title", e.title}, {"summary", e.summary}, {"source", e.source}, {"params", params}});
    }
    io.out << nlohmann::json{{"policies", out}}.dump(2) << "\n";
    return 0;
  }
  for (const PolicyEntry& e : policy_registry()) {
    io.out << std::left << std::setw(14) << e.name << e.title << ": " << e.summary << "\n";
    io.out << std::setw(14) << "" << "source: " << e.source << "\n";
    for (const PolicyParam& p : e.params) {
      io.out << std::setw(14) << "" << "  " << p.name << "=" << default_text(p) << "  (" << range_text(p) << ") " << p.doc
             << "\n";
    }
  }
  io.out << "\n--policy NAME[,key=value...] chooses one (default fixed); docs/policies.md explains the rules.\n";
  return 0;
}

}  // namespace specdec::cli
