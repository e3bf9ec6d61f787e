#include "text/regex.hpp"

#include <oniguruma.h>

#include <memory>
#include <mutex>
#include <new>

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

// A pattern as error messages show it: at most 200 bytes.
std::string excerpt(const std::string& s) { return s.size() <= 200 ? s : s.substr(0, 200) + "..."; }

thread_local const RegexTimeBudget* current_budget = nullptr;

// Oniguruma's match parameters with the retry limits for a text of `bytes` bytes.
struct MatchParam {
  OnigMatchParam* param = onig_new_match_param();
  explicit MatchParam(std::size_t bytes) {
    if (!param) throw std::bad_alloc();
    onig_initialize_match_param(param);
    const unsigned long limit = kRetriesBase + kRetriesPerByte * static_cast<unsigned long>(bytes);
    onig_set_retry_limit_in_match_of_match_param(param, limit);
    onig_set_retry_limit_in_search_of_match_param(param, limit);
  }
  ~MatchParam() { onig_free_match_param(param); }
  MatchParam(const MatchParam&) = delete;
  MatchParam& operator=(const MatchParam&) = delete;
};

std::string error_text(int code, OnigErrorInfo* info) {
  OnigUChar buffer[ONIG_MAX_ERROR_MESSAGE_LEN];
  onig_error_code_to_str(buffer, code, info);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

Regex::Regex(const std::string& pattern, const std::string& where)
    : pattern_(pattern), where_(where), compiled_(std::make_unique<Compiled>()) {
  require_valid_utf8(pattern, where + ": the pattern");
  initialize_oniguruma();
  OnigErrorInfo info{};
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  const int r = onig_new(&compiled_->regex, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8, ONIG_SYNTAX_DEFAULT, &info);
  if (r != ONIG_NORMAL) {
    compiled_->regex = nullptr;
    throw Error(where + ": the regular expression does not compile (" + error_text(r, &info) + "): " + excerpt(pattern));
  }
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

RegexTimeBudget::RegexTimeBudget(std::size_t input_bytes) : RegexTimeBudget(deadline_for(input_bytes) - std::chrono::steady_clock::now()) {}

RegexTimeBudget::RegexTimeBudget(std::chrono::steady_clock::duration allowed)
    : deadline_(std::chrono::steady_clock::now() + allowed), outer_(current_budget) {
  if (outer_ && outer_->deadline_ < deadline_) deadline_ = outer_->deadline_;
  current_budget = this;
}

RegexTimeBudget::~RegexTimeBudget() { current_budget = outer_; }

std::chrono::steady_clock::time_point RegexTimeBudget::deadline_for(std::size_t input_bytes) {
  const double seconds = kSearchSecondsBase + static_cast<double>(input_bytes) / kSearchBytesPerSecond;
  return std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
}

const std::chrono::steady_clock::time_point* RegexTimeBudget::current() { return current_budget ? &current_budget->deadline_ : nullptr; }

std::vector<std::pair<std::size_t, std::size_t>> Regex::find_all(std::string_view s) const {
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  const auto* shared = RegexTimeBudget::current();
  const auto deadline = shared ? *shared : RegexTimeBudget::deadline_for(s.size());
  const MatchParam param(s.size());
  const auto fail = [&](const std::string& why) {
    throw Error(where_ + ": the regex exceeded its search limit on this input (" + why + "; pattern " + excerpt(pattern_) +
                "); see docs/reliability.md");
  };
  std::unique_ptr<OnigRegion, void (*)(OnigRegion*)> region(onig_region_new(), [](OnigRegion* r) { onig_region_free(r, 1); });
  if (!region) throw std::bad_alloc();
  const auto* begin = reinterpret_cast<const OnigUChar*>(s.data());
  const auto* end = begin + s.size();
  std::size_t at = 0;
  while (at <= s.size()) {
    // Checked between searches: a pattern that scans to the end from every position is quadratic
    // over many cheap searches, none of which backtracks much.
    if (std::chrono::steady_clock::now() > deadline) {
      fail("it searched " + std::to_string(s.size()) + " bytes for longer than the time allowed for the text");
    }
    onig_region_clear(region.get());
    const int r = onig_search_with_param(compiled_->regex, begin, end, begin + at, end, region.get(), ONIG_OPTION_NONE, param.param);
    if (r == ONIG_MISMATCH) break;
    if (r == ONIGERR_RETRY_LIMIT_IN_MATCH_OVER || r == ONIGERR_RETRY_LIMIT_IN_SEARCH_OVER) {
      fail("it backtracked more than " + std::to_string(kRetriesBase + kRetriesPerByte * s.size()) + " times over " +
           std::to_string(s.size()) + " bytes");
    }
    if (r < 0) throw Error(where_ + ": regular expression search failed (" + error_text(r, nullptr) + "): " + excerpt(pattern_));
    const OnigRegion* m = region.get();
    const auto b = static_cast<std::size_t>(m->beg[0]);
    const auto e = static_cast<std::size_t>(m->end[0]);
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
