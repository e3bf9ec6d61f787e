#pragma once
// JSON from untrusted text. nlohmann parses without recursion, but copying, dumping and walking a
// value recurse once per level: 100,000 nested brackets overflow the stack after a successful
// parse. Every reader parses through here, which refuses nesting deeper than kMaxJsonDepth before
// nlohmann sees the text, and names the input and byte offset.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "reference/io/input_file.hpp"

namespace specdec {

// Far beyond any real file (tokenizer.json nests about 8 levels), far below a stack's depth.
inline constexpr int kMaxJsonDepth = 128;

// An Error naming `what` when arrays/objects in `text` nest deeper than kMaxJsonDepth (strings are
// skipped; the text need not be valid JSON: the parser reports that).
void check_json_depth(std::string_view text, const std::string& what);

// `text` parsed, after check_json_depth; a syntax error is an Error naming `what` and nlohmann's
// position.
nlohmann::json parse_json(std::string_view text, const std::string& what);
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what);

// read_input_file then parse_json; `what` names the file's role ("tokenizer file", "sweep spec").
nlohmann::json read_json_file(const std::string& path, const std::string& what, uint64_t max_bytes = kMaxInputFileBytes);

}  // namespace specdec
