#include "text/pre_tokenizer.hpp"

#include <unicode/uchar.h>

#include <algorithm>
#include <optional>

#include "reference/core/input_limits.hpp"
#include "text/byte_level.hpp"
#include "text/regex.hpp"
#include "text/utf8.hpp"

namespace specdec::text {

namespace {

// How a split keeps what the pattern matched (Hugging Face's SplitDelimiterBehavior).
enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

Behavior parse_behavior(const json& j, const char* key, const JsonPlace& place) {
  const std::string b = string_member(j, key, place);
  if (b == "Removed") return Behavior::removed;
  if (b == "Isolated") return Behavior::isolated;
  if (b == "MergedWithPrevious") return Behavior::merged_with_previous;
  if (b == "MergedWithNext") return Behavior::merged_with_next;
  if (b == "Contiguous") return Behavior::contiguous;
  place.at(key).fail("is '" + text_excerpt(b) + "' (expected Removed, Isolated, MergedWithPrevious, MergedWithNext or Contiguous)");
}

using Range = std::pair<std::size_t, std::size_t>;

// Splits `piece` at `matches` (sorted, non-overlapping) the way `behavior` says; empty pieces are
// dropped. A sub-piece keeps at_origin only if it starts where the piece starts.
std::vector<Piece> split(const Piece& piece, const std::vector<Range>& matches, bool invert, Behavior behavior) {
  // The whole text as alternating (range, is_match) runs.
  std::vector<std::pair<Range, bool>> runs;
  std::size_t at = 0;
  for (const auto& m : matches) {
    if (m.first > at) runs.push_back({{at, m.first}, invert});
    runs.push_back({m, !invert});
    at = m.second;
  }
  if (at < piece.text.size()) runs.push_back({{at, piece.text.size()}, invert});

  std::vector<Range> kept;
  bool previous_match = false;
  switch (behavior) {
    case Behavior::removed:
      for (const auto& [r, is_match] : runs)
        if (!is_match) kept.push_back(r);
      break;
    case Behavior::isolated:
      for (const auto& [r, is_match] : runs) kept.push_back(r);
      break;
    case Behavior::merged_with_previous:
      for (const auto& [r, is_match] : runs) {
        if (is_match && !previous_match && !kept.empty()) {
          kept.back().second = r.second;
        } else {
          kept.push_back(r);
        }
        previous_match = is_match;
      }
      break;
    case Behavior::merged_with_next:
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->second && !previous_match && !kept.empty()) {
          kept.back().first = it->first.first;
        } else {
          kept.push_back(it->first);
        }
        previous_match = it->second;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case Behavior::contiguous:
      for (std::size_t i = 0; i < runs.size(); ++i) {
        if (i > 0 && runs[i].second == previous_match) {
          kept.back().second = runs[i].first.second;
        } else {
          kept.push_back(runs[i].first);
        }
        previous_match = runs[i].second;
      }
      break;
  }
  std::vector<Piece> out;
  for (const auto& [b, e] : kept) {
    if (e > b) out.push_back({piece.text.substr(b, e - b), piece.at_origin && b == 0});
  }
  return out;
}

// Ranges of every character for which `pred` holds, one character each.
template <typename Pred>
std::vector<Range> char_matches(const std::string& s, Pred pred) {
  std::vector<Range> m;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = std::max<std::size_t>(1, utf8_sequence_length(s, i));
    if (pred(decode_code_point(s, i, n))) m.emplace_back(i, i + n);
    i += n;
  }
  return m;
}

// GPT-2's pre-tokenization pattern, used by ByteLevel with use_regex.
const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace

struct PreTokenizer::Step {
  enum class Kind { byte_level, split, metaspace, digits, whitespace, whitespace_split } kind;
  bool add_prefix_space = false, use_regex = false;  // byte_level
  std::string literal;                               // split (string pattern)
  std::optional<Regex> regex;                        // split (regex pattern), byte_level, whitespace
  bool invert = false;                               // split
  Behavior behavior = Behavior::isolated;            // split
  std::string replacement;                           // metaspace
  std::string prepend_scheme = "always";             // metaspace: always | never | first
  bool split_on_replacement = true;                  // metaspace
  bool individual_digits = false;                    // digits
  std::string where;                                 // the step in the file, for errors
};

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

PreTokenizer PreTokenizer::parse(const json& j, const JsonPlace& place) {
  PreTokenizer p;
  if (!j.is_null()) parse_into(j, place, p);
  return p;
}

void PreTokenizer::parse_into(const json& j, const JsonPlace& place, PreTokenizer& out) {
  const std::string type = component_type(j, place);
  auto step = std::make_unique<Step>();
  if (type == "Sequence") {
    const json& list = required_member(j, "pretokenizers", place);
    if (!list.is_array()) place.at("pretokenizers").fail("must be a list");
    for (std::size_t i = 0; i < list.size(); ++i) parse_into(list[i], place.at("pretokenizers").index(i), out);
    return;
  } else if (type == "ByteLevel") {
    step->kind = Step::Kind::byte_level;
    step->add_prefix_space = bool_member(j, "add_prefix_space", true, place);
    step->use_regex = bool_member(j, "use_regex", true, place);
    if (step->use_regex) step->regex.emplace(kGpt2Pattern, place.where());
  } else if (type == "Split") {
    step->kind = Step::Kind::split;
    const json& pattern = required_member(j, "pattern", place);
    const JsonPlace pp = place.at("pattern");
    if (pattern.is_object() && pattern.contains("String") && pattern.at("String").is_string()) {
      step->literal = pattern.at("String").get<std::string>();
      if (step->literal.empty()) pp.fail("is an empty string pattern");
    } else if (pattern.is_object() && pattern.contains("Regex") && pattern.at("Regex").is_string()) {
      step->regex.emplace(pattern.at("Regex").get<std::string>(), pp.where());
    } else {
      pp.fail("must be {\"String\": ...} or {\"Regex\": ...}");
    }
    step->behavior = parse_behavior(j, "behavior", place);
    step->invert = bool_member(j, "invert", false, place);
  } else if (type == "Metaspace") {
    step->kind = Step::Kind::metaspace;
    step->replacement = string_member(j, "replacement", place);
    if (step->replacement.empty() || utf8_sequence_length(step->replacement, 0) != step->replacement.size()) {
      place.at("replacement").fail("must be one character");
    }
    if (const json* scheme = optional_member(j, "prepend_scheme")) {
      if (!scheme->is_string()) place.at("prepend_scheme").fail("must be a string");
      step->prepend_scheme = scheme->get<std::string>();
      if (step->prepend_scheme != "always" && step->prepend_scheme != "never" && step->prepend_scheme != "first") {
        place.at("prepend_scheme").fail("is '" + text_excerpt(step->prepend_scheme) + "' (expected always, never or first)");
      }
    } else if (optional_member(j, "add_prefix_space")) {  // the older spelling
      step->prepend_scheme = bool_member(j, "add_prefix_space", true, place) ? "always" : "never";
    }
    step->split_on_replacement = bool_member(j, "split", true, place);
  } else if (type == "Digits") {
    step->kind = Step::Kind::digits;
    step->individual_digits = bool_member(j, "individual_digits", false, place);
  } else if (type == "Whitespace") {
    step->kind = Step::Kind::whitespace;
    step->regex.emplace(R"(\w+|[^\w\s]+)", place.where());
  } else if (type == "WhitespaceSplit") {
    step->kind = Step::Kind::whitespace_split;
  } else {
    place.at("type").fail("is '" + text_excerpt(type) +
                          "', a pre-tokenizer specdec does not support (supported: Sequence, ByteLevel, Split, Metaspace, "
                          "Digits, Whitespace, WhitespaceSplit)");
  }
  step->where = place.where() + " (" + type + ")";
  out.steps_.push_back(std::move(step));
}

std::vector<Piece> PreTokenizer::apply(std::vector<Piece> pieces, uint64_t max_bytes) const {
  for (const auto& step : steps_) {
    std::vector<Piece> next;
    for (Piece& piece : pieces) {
      std::vector<Piece> parts;
      switch (step->kind) {
        case Step::Kind::byte_level: {
          if (step->add_prefix_space && (piece.text.empty() || piece.text[0] != ' ')) piece.text = " " + piece.text;
          parts = step->use_regex ? split(piece, step->regex->find_all(piece.text), false, Behavior::isolated)
                                  : std::vector<Piece>{piece};
          for (Piece& p : parts) p.text = to_byte_level(p.text);
          break;
        }
        case Step::Kind::split:
          parts = split(piece, step->regex ? step->regex->find_all(piece.text) : find_all_literal(piece.text, step->literal),
                        step->invert, step->behavior);
          break;
        case Step::Kind::metaspace: {
          std::string t;
          for (char c : piece.text) {
            if (c == ' ') {
              t += step->replacement;
            } else {
              t += c;
            }
          }
          const bool starts = t.compare(0, step->replacement.size(), step->replacement) == 0;
          if (!starts && (step->prepend_scheme == "always" || (step->prepend_scheme == "first" && piece.at_origin))) {
            t = step->replacement + t;
          }
          const Piece replaced{t, piece.at_origin};
          parts = step->split_on_replacement
                      ? split(replaced, find_all_literal(replaced.text, step->replacement), false, Behavior::merged_with_next)
                      : std::vector<Piece>{replaced};
          break;
        }
        case Step::Kind::digits: {
          // Rust's char::is_numeric: the general categories Nd, Nl and No.
          const auto digit = [](char32_t cp) {
            const auto t = u_charType(static_cast<UChar32>(cp));
            return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
          };
          parts = split(piece, char_matches(piece.text, digit), false,
                        step->individual_digits ? Behavior::isolated : Behavior::contiguous);
          break;
        }
        case Step::Kind::whitespace:
          parts = split(piece, step->regex->find_all(piece.text), true, Behavior::removed);
          break;
        case Step::Kind::whitespace_split:
          parts = split(piece, char_matches(piece.text, is_unicode_whitespace), false, Behavior::removed);
          break;
      }
      for (Piece& p : parts) next.push_back(std::move(p));
    }
    pieces = std::move(next);
    uint64_t bytes = 0;
    for (const Piece& p : pieces) bytes += p.text.size();
    if (bytes > max_bytes) {
      throw Error(step->where + " makes the text " + std::to_string(bytes) + " bytes long, more than specdec allows here (" +
                  std::to_string(max_bytes) + " bytes: a tokenizer may make a text at most " + std::to_string(kMaxTokenizerExpansion) +
                  " times longer, plus " + std::to_string(kMaxTokenizerExpansionSlack) + " bytes); see docs/reliability.md");
    }
  }
  return pieces;
}

}  // namespace specdec::text
