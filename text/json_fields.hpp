#pragma once
// Reading tokenizer.json fields with errors that name the file and the field path, e.g.
// "tok/tokenizer.json: field 'model.merges[3]' must be a pair of strings".
#include <nlohmann/json.hpp>
#include <string>

#include "reference/core/error.hpp"

namespace specdec::text {

using json = nlohmann::json;

// A position in a JSON file: the file, and the dotted field path inside it.
struct JsonPlace {
  std::string file;
  std::string path;  // "" = the top level

  JsonPlace at(const std::string& key) const { return {file, path.empty() ? key : path + "." + key}; }
  JsonPlace index(std::size_t i) const { return {file, path + "[" + std::to_string(i) + "]"}; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(file + ": " + (path.empty() ? std::string() : "field '" + path + "' ") + what);
  }
};

// j[key] when present and not null; nullptr otherwise.
inline const json* optional_member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

inline const json& required_member(const json& j, const char* key, const JsonPlace& place) {
  const json* m = optional_member(j, key);
  if (!m) place.at(key).fail("is missing");
  return *m;
}

inline std::string string_member(const json& j, const char* key, const JsonPlace& place) {
  const json& m = required_member(j, key, place);
  if (!m.is_string()) place.at(key).fail(std::string("must be a string, got ") + m.type_name());
  return m.get<std::string>();
}

inline bool bool_member(const json& j, const char* key, bool fallback, const JsonPlace& place) {
  const json* m = optional_member(j, key);
  if (!m) return fallback;
  if (!m->is_boolean()) place.at(key).fail(std::string("must be true or false, got ") + m->type_name());
  return m->get<bool>();
}

// The "type" of a component object (normalizer, pre_tokenizer, model, decoder, ...).
inline std::string component_type(const json& j, const JsonPlace& place) {
  if (!j.is_object()) place.fail(std::string("must be an object, got ") + j.type_name());
  return string_member(j, "type", place);
}

}  // namespace specdec::text
