#pragma once
// Small helpers for reading spec files: every failure names the file and the field and says what
// was expected, so a typo in a hand-written spec is found at once.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace specdec::sim {

// Reads and parses a JSON file through the shared reader (reference/io/json_input.hpp: regular
// files of bounded size, bounded nesting); throws specdec::Error naming `what` and the file.
nlohmann::json read_json_file(const std::filesystem::path& path, const std::string& what = "spec file");

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

// A draft tree's rank paths, e.g. [[0],[1],[0,0]]: a list of lists of 32-bit integers (a float or a
// number beyond int is refused, not cast); throws naming `what`.
std::vector<std::vector<int>> get_rank_paths(const nlohmann::json& j, const std::string& what);

// Checks lo <= value <= hi (or value == 0 when allow_zero); NaN and infinities fail. Throws naming
// the field, the source and the range (with `unit`, e.g. "bytes/s").
void require_in_range(double value, const std::string& field, const std::string& source, double lo, double hi,
                      bool allow_zero = false, const std::string& unit = "");
// An integer field (`fallback` when absent) that must lie in [lo, hi].
int get_int_in(const nlohmann::json& j, const std::string& key, int fallback, int lo, int hi, const std::string& source);

}  // namespace specdec::sim
