#include "text/regex.hpp"

#include <oniguruma.h>

#include <mutex>

#include "reference/core/error.hpp"
#include "text/utf8.hpp"

namespace specdec::text {

struct Regex::Compiled {
  regex_t* regex = nullptr;
  ~Compiled() {
    if (regex) onig_free(regex);
  }
};

namespace {

void initialize_oniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

std::string error_text(int code, OnigErrorInfo* info) {
  OnigUChar buffer[ONIG_MAX_ERROR_MESSAGE_LEN];
  onig_error_code_to_str(buffer, code, info);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& where) : pattern_(pattern), compiled_(std::make_unique<Compiled>()) {
  require_valid_utf8(pattern, where + ": the pattern");
  initialize_oniguruma();
  OnigErrorInfo info{};
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int r = onig_new(&compiled_->regex, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
  if (r != ONIG_NORMAL) {
    compiled_->regex = nullptr;
    throw Error(where + ": the regular expression does not compile (" + error_text(r, &info) + "): " + pattern);
  }
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(std::string_view s) const {
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  OnigRegion* region = onig_region_new();
  const auto* begin = reinterpret_cast<const OnigUChar*>(s.data());
  const auto* end = begin + s.size();
  std::size_t at = 0;
  while (at <= s.size()) {
    onig_region_clear(region);
    const int r = onig_search(compiled_->regex, begin, end, begin + at, end, region, ONIG_OPTION_NONE);
    if (r == ONIG_MISMATCH) break;
    if (r < 0) {
      onig_region_free(region, 1);
      throw Error("regular expression search failed (" + error_text(r, nullptr) + "): " + pattern_);
    }
    const auto b = static_cast<std::size_t>(region->beg[0]);
    const auto e = static_cast<std::size_t>(region->end[0]);
    if (e > b) {
      matches.emplace_back(b, e);
      at = e;
    } else {
      // An empty match: step over one character so the search moves on.
      if (b >= s.size()) break;
      const std::size_t n = utf8_sequence_length(s, b);
      at = b + (n == 0 ? 1 : n);
    }
  }
  onig_region_free(region, 1);
  return matches;
}

std::vector<std::pair<std::size_t, std::size_t>> find_all_literal(std::string_view s, std::string_view literal) {
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  if (literal.empty()) return matches;
  for (std::size_t at = s.find(literal); at != std::string_view::npos; at = s.find(literal, at + literal.size())) {
    matches.emplace_back(at, at + literal.size());
  }
  return matches;
}

}  // namespace specdec::text
