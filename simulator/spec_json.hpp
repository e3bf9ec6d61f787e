#pragma once
// Small helpers for reading spec files: every failure names the file and the field and says what
// was expected, so a typo in a hand-written spec is found at once.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace specdec::sim {

// Reads and parses a JSON file; throws specdec::Error naming the file on any failure.
nlohmann::json read_json_file(const std::filesystem::path& path);

// Field accessors. `source` names the file (or object) for error messages.
bool has_field(const nlohmann::json& j, const std::string& key);
double get_number(const nlohmann::json& j, const std::string& key, const std::string& source);
double get_number_or(const nlohmann::json& j, const std::string& key, double fallback,
                     const std::string& source);
int get_int(const nlohmann::json& j, const std::string& key, const std::string& source);
int get_int_or(const nlohmann::json& j, const std::string& key, int fallback, const std::string& source);
std::string get_string(const nlohmann::json& j, const std::string& key, const std::string& source);
std::string get_string_or(const nlohmann::json& j, const std::string& key, const std::string& fallback,
                          const std::string& source);
bool get_bool_or(const nlohmann::json& j, const std::string& key, bool fallback, const std::string& source);

// Throws if `j` holds a key that is neither in `allowed` nor a comment ("source", "sources",
// "comment", "description" or any key starting with '_').
void check_known_fields(const nlohmann::json& j, const std::vector<std::string>& allowed,
                        const std::string& source);

// The rows of a set file ("rows": a non-empty list of objects), each merged over `defaults` (the
// row's own fields win), with its place for error messages ("<source> row <i>"). `what` says what
// a row is, for the error when there are none.
std::vector<std::pair<std::string, nlohmann::json>> rows_over_defaults(const nlohmann::json& j,
                                                                       const nlohmann::json& defaults,
                                                                       const std::string& source,
                                                                       const std::string& what);

// Checks value > 0 (or >= 0 when allow_zero) and finite; throws naming field and source.
void require_positive(double value, const std::string& field, const std::string& source,
                      bool allow_zero = false);

}  // namespace specdec::sim
