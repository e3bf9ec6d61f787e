#include "simulator/spec_json.hpp"

#include <cmath>
#include <fstream>
#include <sstream>

#include "reference/core/error.hpp"
#include "simulator/join.hpp"

namespace specdec::sim {

nlohmann::json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw Error("cannot open JSON file '" + path.string() + "': no such file or not readable");
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("'" + path.string() + "' is not valid JSON: " + e.what());
  }
}

bool has_field(const nlohmann::json& j, const std::string& key) {
  return j.is_object() && j.contains(key) && !j.at(key).is_null();
}

double get_number(const nlohmann::json& j, const std::string& key, const std::string& source) {
  if (!has_field(j, key)) throw Error(source + ": missing required field '" + key + "' (a number)");
  const auto& v = j.at(key);
  if (!v.is_number())
    throw Error(source + ": field '" + key + "' must be a number, got " + v.dump());
  const double x = v.get<double>();
  if (!std::isfinite(x)) throw Error(source + ": field '" + key + "' must be finite");
  return x;
}

double get_number_or(const nlohmann::json& j, const std::string& key, double fallback,
                     const std::string& source) {
  return has_field(j, key) ? get_number(j, key, source) : fallback;
}

int get_int(const nlohmann::json& j, const std::string& key, const std::string& source) {
  const double x = get_number(j, key, source);
  if (x != std::floor(x) || std::fabs(x) > 2.0e9)
    throw Error(source + ": field '" + key + "' must be an integer, got " + j.at(key).dump());
  return static_cast<int>(x);
}

int get_int_or(const nlohmann::json& j, const std::string& key, int fallback, const std::string& source) {
  return has_field(j, key) ? get_int(j, key, source) : fallback;
}

std::string get_string(const nlohmann::json& j, const std::string& key, const std::string& source) {
  if (!has_field(j, key)) throw Error(source + ": missing required field '" + key + "' (a string)");
  const auto& v = j.at(key);
  if (!v.is_string()) throw Error(source + ": field '" + key + "' must be a string, got " + v.dump());
  return v.get<std::string>();
}

std::string get_string_or(const nlohmann::json& j, const std::string& key, const std::string& fallback,
                          const std::string& source) {
  return has_field(j, key) ? get_string(j, key, source) : fallback;
}

bool get_bool_or(const nlohmann::json& j, const std::string& key, bool fallback, const std::string& source) {
  if (!has_field(j, key)) return fallback;
  const auto& v = j.at(key);
  if (!v.is_boolean()) throw Error(source + ": field '" + key + "' must be true or false, got " + v.dump());
  return v.get<bool>();
}

void check_known_fields(const nlohmann::json& j, const std::vector<std::string>& allowed,
                        const std::string& source) {
  if (!j.is_object()) throw Error(source + ": expected a JSON object, got " + std::string(j.type_name()));
  for (const auto& [key, value] : j.items()) {
    if (key == "source" || key == "sources" || key == "comment" || key == "description" ||
        (!key.empty() && key[0] == '_'))
      continue;
    bool known = false;
    for (const auto& a : allowed) known = known || a == key;
    if (!known) {
      throw Error(source + ": unknown field '" + key + "'; expected one of: " + join_names(allowed));
    }
  }
}

std::vector<std::pair<std::string, nlohmann::json>> rows_over_defaults(const nlohmann::json& j,
                                                                       const nlohmann::json& defaults,
                                                                       const std::string& source,
                                                                       const std::string& what) {
  if (!has_field(j, "rows") || !j.at("rows").is_array() || j.at("rows").empty())
    throw Error(source + ": 'rows' must be a non-empty list of " + what);
  std::vector<std::pair<std::string, nlohmann::json>> out;
  for (const auto& r : j.at("rows")) {
    std::string where = source + " row " + std::to_string(out.size());
    if (!r.is_object()) throw Error(where + ": expected an object");
    nlohmann::json merged = defaults;
    for (const auto& [k, v] : r.items()) merged[k] = v;
    out.emplace_back(std::move(where), std::move(merged));
  }
  return out;
}

void require_positive(double value, const std::string& field, const std::string& source, bool allow_zero) {
  if (!std::isfinite(value) || value < 0.0 || (!allow_zero && value == 0.0)) {
    std::ostringstream s;
    s << source << ": field '" << field << "' must be " << (allow_zero ? ">= 0" : "> 0") << ", got "
      << value;
    throw Error(s.str());
  }
}

}  // namespace specdec::sim
