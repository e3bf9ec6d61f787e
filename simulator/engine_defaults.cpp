#include "simulator/engine_defaults.hpp"

#include "reference/core/error.hpp"
#include "simulator/engine_spec.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

namespace {
// The per-method maps whose "default" entry the shared file supplies.
const char* const kMethodMaps[] = {"draft_step_s", "spec_step_s"};
}  // namespace

void check_engine_defaults(const nlohmann::json& d, const std::string& source) {
  if (!d.is_object() || !has_field(d, "overhead") || !d.at("overhead").is_object())
    throw Error(source + ": engine defaults must be an object with an 'overhead' object {draft_step_s, spec_step_s}");
  check_known_fields(d, {"overhead"}, source);
  const auto& o = d.at("overhead");
  const std::string where = source + " (overhead)";
  check_known_fields(o, {"draft_step_s", "spec_step_s", "tree"}, where);
  if (has_field(o, "tree")) parse_tree_cost(o.at("tree"), source + " (overhead.tree)");
  for (const char* key : kMethodMaps) {
    if (!has_field(o, key)) continue;
    if (!o.at(key).is_number())
      throw Error(where + ": field '" + key + "' must be a number of seconds (the default for every method), got " +
                  o.at(key).dump());
    require_in_range(o.at(key).get<double>(), key, where, 0.0, 1.0, true, "s");
  }
}

nlohmann::json with_engine_defaults(nlohmann::json engine, const nlohmann::json& defaults) {
  if (!engine.is_object() || !has_field(defaults, "overhead")) return engine;
  const auto& d = defaults.at("overhead");
  if (!has_field(engine, "overhead")) engine["overhead"] = nlohmann::json::object();
  nlohmann::json& o = engine["overhead"];
  if (!o.is_object()) return engine;  // parse_engine_spec says what is wrong with it
  for (const char* key : kMethodMaps) {
    if (!has_field(d, key)) continue;
    if (!has_field(o, key)) o[key] = nlohmann::json::object();
    nlohmann::json& m = o[key];
    if (m.is_object() && !m.contains("default")) m["default"] = d.at(key);
  }
  // A tree term the engine leaves out is the shared one.
  if (has_field(d, "tree")) {
    if (!has_field(o, "tree")) o["tree"] = nlohmann::json::object();
    if (o["tree"].is_object())
      for (const auto& [field, v] : d.at("tree").items())
        if (!o["tree"].contains(field)) o["tree"][field] = v;
  }
  return engine;
}

}  // namespace specdec::sim
