#include "text/normalizer.hpp"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <optional>

#include "reference/core/input_limits.hpp"

#include "text/regex.hpp"
#include "text/utf8.hpp"

namespace specdec::text {

struct Normalizer::Step {
  enum class Kind { unicode_form, lowercase, strip, replace, prepend } kind;
  std::string form;                 // unicode_form: NFC | NFD | NFKC | NFKD
  bool left = false, right = false;  // strip
  std::string literal;              // replace (string pattern) / prepend
  std::optional<Regex> regex;       // replace (regex pattern)
  std::string content;              // replace
  std::string where;                // the step in the file, for errors
};

Normalizer::Normalizer() = default;
Normalizer::~Normalizer() = default;
Normalizer::Normalizer(Normalizer&&) noexcept = default;
Normalizer& Normalizer::operator=(Normalizer&&) noexcept = default;

Normalizer Normalizer::parse(const json& j, const JsonPlace& place) {
  Normalizer n;
  if (!j.is_null()) parse_into(j, place, n);
  return n;
}

namespace {

// A Replace / Split pattern: {"String": s} or {"Regex": r}.
void parse_pattern(const json& j, const JsonPlace& place, std::string& literal, std::optional<Regex>& regex) {
  if (j.is_object() && j.contains("String") && j.at("String").is_string()) {
    literal = j.at("String").get<std::string>();
    if (literal.empty()) place.fail("is an empty string pattern");
  } else if (j.is_object() && j.contains("Regex") && j.at("Regex").is_string()) {
    regex.emplace(j.at("Regex").get<std::string>(), place.where());
  } else {
    place.fail("must be {\"String\": ...} or {\"Regex\": ...}");
  }
}

std::string unicode_form(const std::string& s, const std::string& form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = form == "NFC"    ? icu::Normalizer2::getNFCInstance(status)
                              : form == "NFD"  ? icu::Normalizer2::getNFDInstance(status)
                              : form == "NFKC" ? icu::Normalizer2::getNFKCInstance(status)
                                               : icu::Normalizer2::getNFKDInstance(status);
  if (U_FAILURE(status)) throw Error(std::string("ICU has no ") + form + " normalizer (" + u_errorName(status) + ")");
  const icu::UnicodeString out = n->normalize(icu::UnicodeString::fromUTF8(s), status);
  if (U_FAILURE(status)) throw Error(form + " normalization failed (" + u_errorName(status) + ")");
  std::string r;
  out.toUTF8String(r);
  return r;
}

std::string strip(const std::string& s, bool left, bool right) {
  std::size_t b = 0, e = s.size();
  if (left) {
    while (b < e) {
      const std::size_t n = utf8_sequence_length(s, b);
      if (n == 0 || !is_unicode_whitespace(decode_code_point(s, b, n))) break;
      b += n;
    }
  }
  if (right) {
    while (e > b) {
      std::size_t start = e - 1;
      while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
      const std::size_t n = utf8_sequence_length(s, start);
      if (n == 0 || start + n != e || !is_unicode_whitespace(decode_code_point(s, start, n))) break;
      e = start;
    }
  }
  return s.substr(b, e - b);
}

std::string replace_all(const std::string& s, const std::vector<std::pair<std::size_t, std::size_t>>& matches,
                        const std::string& content) {
  std::string out;
  std::size_t at = 0;
  for (const auto& [b, e] : matches) {
    out.append(s, at, b - at);
    out += content;
    at = e;
  }
  out.append(s, at, std::string::npos);
  return out;
}

}  // namespace

void Normalizer::parse_into(const json& j, const JsonPlace& place, Normalizer& out) {
  const std::string type = component_type(j, place);
  auto step = std::make_unique<Step>();
  if (type == "Sequence") {
    const json& list = required_member(j, "normalizers", place);
    if (!list.is_array()) place.at("normalizers").fail("must be a list");
    for (std::size_t i = 0; i < list.size(); ++i) parse_into(list[i], place.at("normalizers").index(i), out);
    return;
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    step->kind = Step::Kind::unicode_form;
    step->form = type;
  } else if (type == "Lowercase") {
    step->kind = Step::Kind::lowercase;
  } else if (type == "Strip") {
    step->kind = Step::Kind::strip;
    step->left = bool_member(j, "strip_left", false, place);
    step->right = bool_member(j, "strip_right", false, place);
  } else if (type == "Replace") {
    step->kind = Step::Kind::replace;
    parse_pattern(required_member(j, "pattern", place), place.at("pattern"), step->literal, step->regex);
    step->content = string_member(j, "content", place);
  } else if (type == "Prepend") {
    step->kind = Step::Kind::prepend;
    step->literal = string_member(j, "prepend", place);
  } else {
    place.at("type").fail("is '" + text_excerpt(type) +
                          "', a normalizer specdec does not support (supported: Sequence, NFC, NFD, NFKC, NFKD, Lowercase, "
                          "Strip, Replace, Prepend)");
  }
  step->where = place.where() + " (" + type + ")";
  out.steps_.push_back(std::move(step));
}

uint64_t expansion_limit(uint64_t input_bytes) {
  if (input_bytes > (UINT64_MAX - kMaxTokenizerExpansionSlack) / kMaxTokenizerExpansion) return UINT64_MAX;
  return input_bytes * kMaxTokenizerExpansion + kMaxTokenizerExpansionSlack;
}

std::string Normalizer::apply(std::string s) const {
  const uint64_t limit = expansion_limit(s.size());
  return apply(std::move(s), limit);
}

std::string Normalizer::apply(std::string s, uint64_t max_bytes) const {
  const uint64_t input_bytes = s.size();
  const auto check = [&](const Step& step, uint64_t bytes) {
    if (bytes > max_bytes) {
      throw Error(step.where + " makes the text " + (bytes == UINT64_MAX ? std::string("more than 2^64") : std::to_string(bytes)) +
                  " bytes long from " + std::to_string(input_bytes) + ", more than specdec allows here (" + std::to_string(max_bytes) +
                  " bytes: a tokenizer may make a text at most " + std::to_string(kMaxTokenizerExpansion) + " times longer, plus " +
                  std::to_string(kMaxTokenizerExpansionSlack) + " bytes); see docs/reliability.md");
    }
  };
  for (const auto& step : steps_) {
    switch (step->kind) {
      case Step::Kind::unicode_form:
        s = unicode_form(s, step->form);
        break;
      case Step::Kind::lowercase: {
        std::string r;
        icu::UnicodeString::fromUTF8(s).toLower(icu::Locale::getRoot()).toUTF8String(r);
        s = std::move(r);
        break;
      }
      case Step::Kind::strip:
        s = strip(s, step->left, step->right);
        break;
      case Step::Kind::replace: {
        const auto matches = step->regex ? step->regex->find_all(s) : find_all_literal(s, step->literal);
        // The result's length, known before it is built (each match becomes the content), computed
        // so that nothing wraps.
        uint64_t matched = 0;
        for (const auto& [b, e] : matches) matched += e - b;
        uint64_t added = 0;
        if (__builtin_mul_overflow(uint64_t(matches.size()), uint64_t(step->content.size()), &added)) added = UINT64_MAX;
        const uint64_t kept = s.size() - matched;
        check(*step, added > UINT64_MAX - kept ? UINT64_MAX : kept + added);
        s = replace_all(s, matches, step->content);
        break;
      }
      case Step::Kind::prepend:
        check(*step, uint64_t(s.size()) + step->literal.size());
        if (!s.empty()) s = step->literal + s;
        break;
    }
    check(*step, s.size());
  }
  return s;
}

}  // namespace specdec::text
