#include "reference/io/json_input.hpp"

#include "reference/core/error.hpp"

namespace specdec {

void check_json_depth(std::string_view text, const std::string& what) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        throw Error(what + ": JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels (at byte " +
                    std::to_string(i) + ")");
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    }
  }
}

namespace {

template <class Json>
Json parse_checked(std::string_view text, const std::string& what) {
  check_json_depth(text, what);
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::exception& e) {
    throw Error(what + ": not valid JSON: " + e.what());
  }
}

}  // namespace

nlohmann::json parse_json(std::string_view text, const std::string& what) {
  return parse_checked<nlohmann::json>(text, what);
}

nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& what) {
  return parse_checked<nlohmann::ordered_json>(text, what);
}

nlohmann::json read_json_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  const std::string text = read_input_file(path, what, max_bytes);
  return parse_json(text, path);  // "<file>: not valid JSON ...", as every file error begins
}

}  // namespace specdec
