#include "simulator/spec_json.hpp"

#include <cmath>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/io/json_input.hpp"
#include "reference/io/json_int.hpp"
#include "simulator/join.hpp"

namespace specdec::sim {

nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& what) {
  // The shared reader refuses devices, pipes, directories, oversize files and deep nesting.
  return specdec::read_json_file(path.string(), what);
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

namespace specdec::sim {

void require_in_range(double value, const std::string& field, const std::string& source, double lo, double hi,
                      bool allow_zero, const std::string& unit) {
  // Written so that NaN fails too.
  if (allow_zero && value == 0.0) return;
  if (!(value >= lo && value <= hi)) {
    std::ostringstream s;
    s << source << ": field '" << field << "' must be ";
    if (lo == 0 && allow_zero) s << ">= 0 and at most " << hi;
    else if (allow_zero) s << "0 or within [" << lo << ", " << hi << "]";
    else if (lo > 0) s << "> 0 and within [" << lo << ", " << hi << "]";
    else s << "within [" << lo << ", " << hi << "]";
    s << (unit.empty() ? "" : " " + unit) << ", got " << value;
    throw Error(s.str());
  }
}

std::vector<std::vector<int>> get_rank_paths(const nlohmann::json& j, const std::string& what) {
  if (!j.is_array()) throw Error(what + " must be a list of rank paths, e.g. [[0],[1],[0,0]]");
  std::vector<std::vector<int>> out;
  for (const auto& path : j) {
    if (!path.is_array()) throw Error(what + ": every rank path must be a list of integers, got " + path.dump());
    std::vector<int> ranks;
    for (const auto& r : path) ranks.push_back(json_int32(r, what + ": a rank"));
    out.push_back(std::move(ranks));
  }
  return out;
}

int get_int_in(const nlohmann::json& j, const std::string& key, int fallback, int lo, int hi, const std::string& source) {
  const int v = get_int_or(j, key, fallback, source);
  if (v < lo || v > hi)
    throw Error(source + ": field '" + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                std::to_string(v));
  return v;
}

}  // namespace specdec::sim
