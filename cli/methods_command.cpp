// specdec methods: the method registry (reference/methods) as a table or JSON — every name and
// alias the commands accept, the drafter each method needs and the shapes it takes.
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/options.hpp"
#include "reference/drafters/eagle_config.hpp"
#include "reference/methods/registry.hpp"
#include "reference/policies/policy_spec.hpp"

namespace specdec::cli {

namespace {

std::vector<std::string> shapes_of(const MethodEntry& e) {
  std::vector<std::string> s;
  if (e.shapes.chain) s.push_back("chain");
  if (e.shapes.static_tree) s.push_back("static tree");
  if (e.shapes.dynamic_tree) s.push_back("dynamic tree");
  return s;
}

std::string joined(const std::vector<std::string>& v, const std::string& separator = ", ") {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : separator) + x;
  return s;
}

}  // namespace

int run_methods(const std::vector<std::string>& args, CommandIO& io) {
  bool json = false;
  po::options_description desc("methods options");
  desc.add_options()("json", po::bool_switch(&json), "print one JSON object instead of a table");
  if (!parse_options(args, desc, io, "specdec methods [--json]")) return 0;
  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const MethodEntry& e : method_registry()) {
      nlohmann::json drafter = nullptr;
      if (e.drafter.kind == DrafterNeed::Kind::language_model) drafter = {{"kind", "language_model"}};
      if (e.drafter.kind == DrafterNeed::Kind::eagle_head) drafter = {{"kind", "head"}, {"head", eagle_kind_name(e.drafter.head)}};
      if (e.drafter.kind == DrafterNeed::Kind::context) drafter = {{"kind", "context"}};
      if (e.drafter.kind == DrafterNeed::Kind::medusa_heads) drafter = {{"kind", "medusa_heads"}};
      if (!drafter.is_null()) drafter["description"] = e.drafter.description, drafter["bundled_dir"] = e.drafter.bundled_dir;
      nlohmann::json params = nlohmann::json::array();
      for (const MethodParam& p : e.params) {
        nlohmann::json param = {{"name", p.name}, {"kind", p.kind()}, {"default", p.default_json()}, {"doc", p.doc}};
        if (p.is_choice()) {
          param["choices"] = p.choices;
        } else {
          param["min"] = p.min;
          param["max"] = p.max;
        }
        params.push_back(param);
      }
      out.push_back({{"name", e.name}, {"aliases", e.aliases}, {"title", e.title}, {"summary", e.summary},
                     {"drafter", drafter}, {"shapes", shapes_of(e)}, {"force_depth", e.shapes.force_depth},
                     {"params", params}});
    }
    io.out << nlohmann::json{{"methods", out}}.dump(2) << "\n";
    return 0;
  }
  for (const MethodEntry& e : method_registry()) {
    io.out << std::left << std::setw(12) << e.name << e.title << ": " << e.summary << "\n";
    if (!e.aliases.empty()) io.out << std::setw(12) << "" << "also: " << joined(e.aliases) << "\n";
    if (e.drafter.loads_checkpoint()) {
      io.out << std::setw(12) << "" << "drafter: " << e.drafter.description << " (--drafter DIR; bundled: models/"
             << e.drafter.bundled_dir << ")\n";
    } else if (e.drafter.kind == DrafterNeed::Kind::context) {
      io.out << std::setw(12) << "" << "drafts from: " << e.drafter.description << "\n";
    }
    for (const MethodParam& p : e.params) {
      if (p.is_choice()) {
        io.out << std::setw(12) << "" << "--method " << e.name << "," << p.name << "=" << joined(p.choices, "|") << ": " << p.doc << "\n";
        continue;
      }
      io.out << std::setw(12) << "" << "--method " << e.name << "," << p.name << "=" << policy_number_text(p.default_value)
             << "  in [" << policy_number_text(p.min) << ", " << policy_number_text(p.max) << "]: " << p.doc << "\n";
    }
    if (method_drafts(e)) {
      io.out << std::setw(12) << "" << "shapes: " << joined(shapes_of(e)) << (e.shapes.force_depth ? "; --force-depth" : "")
             << "\n";
    }
  }
  return 0;
}

}  // namespace specdec::cli
