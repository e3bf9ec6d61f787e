#include "text/token_decoder.hpp"

#include <optional>

#include "text/byte_level.hpp"
#include "text/regex.hpp"
#include "text/utf8.hpp"

namespace specdec::text {

struct TokenDecoder::Step {
  enum class Kind { byte_level, metaspace, replace, byte_fallback, fuse, strip } kind;
  std::string replacement;          // metaspace
  bool prepend = true;              // metaspace: prepend_scheme != never
  std::string literal, content;     // replace
  std::optional<Regex> regex;       // replace
  std::string strip_char;           // strip
  int start = 0, stop = 0;          // strip
};

TokenDecoder::TokenDecoder() = default;
TokenDecoder::~TokenDecoder() = default;
TokenDecoder::TokenDecoder(TokenDecoder&&) noexcept = default;
TokenDecoder& TokenDecoder::operator=(TokenDecoder&&) noexcept = default;

TokenDecoder TokenDecoder::parse(const json& j, const JsonPlace& place) {
  TokenDecoder d;
  if (!j.is_null()) {
    d.null_ = false;
    parse_into(j, place, d);
  }
  return d;
}

void TokenDecoder::parse_into(const json& j, const JsonPlace& place, TokenDecoder& out) {
  const std::string type = component_type(j, place);
  auto step = std::make_unique<Step>();
  if (type == "Sequence") {
    const json& list = required_member(j, "decoders", place);
    if (!list.is_array()) place.at("decoders").fail("must be a list");
    for (std::size_t i = 0; i < list.size(); ++i) parse_into(list[i], place.at("decoders").index(i), out);
    return;
  } else if (type == "ByteLevel") {
    step->kind = Step::Kind::byte_level;
  } else if (type == "Metaspace") {
    step->kind = Step::Kind::metaspace;
    step->replacement = string_member(j, "replacement", place);
    if (const json* scheme = optional_member(j, "prepend_scheme")) {
      step->prepend = !(scheme->is_string() && scheme->get<std::string>() == "never");
    } else {
      step->prepend = bool_member(j, "add_prefix_space", true, place);
    }
  } else if (type == "Replace") {
    step->kind = Step::Kind::replace;
    const json& pattern = required_member(j, "pattern", place);
    if (pattern.is_object() && pattern.contains("String") && pattern.at("String").is_string()) {
      step->literal = pattern.at("String").get<std::string>();
      if (step->literal.empty()) place.at("pattern").fail("is an empty string pattern");
    } else if (pattern.is_object() && pattern.contains("Regex") && pattern.at("Regex").is_string()) {
      step->regex.emplace(pattern.at("Regex").get<std::string>(), place.at("pattern").where());
    } else {
      place.at("pattern").fail("must be {\"String\": ...} or {\"Regex\": ...}");
    }
    step->content = string_member(j, "content", place);
  } else if (type == "ByteFallback") {
    step->kind = Step::Kind::byte_fallback;
  } else if (type == "Fuse") {
    step->kind = Step::Kind::fuse;
  } else if (type == "Strip") {
    step->kind = Step::Kind::strip;
    step->strip_char = string_member(j, "content", place);
    const json& start = required_member(j, "start", place);
    const json& stop = required_member(j, "stop", place);
    if (!start.is_number_unsigned() || !stop.is_number_unsigned()) place.fail("needs non-negative integers 'start' and 'stop'");
    step->start = start.get<int>();
    step->stop = stop.get<int>();
  } else {
    place.at("type").fail("is '" + text_excerpt(type) +
                          "', a decoder specdec does not support (supported: Sequence, ByteLevel, Metaspace, Replace, "
                          "ByteFallback, Fuse, Strip)");
  }
  out.steps_.push_back(std::move(step));
}

namespace {

// "<0xAB>" -> 0xAB.
std::optional<unsigned char> byte_token(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return std::nullopt;
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = hex(t[3]), lo = hex(t[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<unsigned char>(hi * 16 + lo);
}

std::string replace_literal(const std::string& s, const std::string& from, const std::string& to) {
  std::string out;
  std::size_t at = 0;
  for (const auto& [b, e] : find_all_literal(s, from)) {
    out.append(s, at, b - at);
    out += to;
    at = e;
  }
  out.append(s, at, std::string::npos);
  return out;
}

}  // namespace

std::string TokenDecoder::decode(std::vector<std::string> tokens) const {
  if (null_) {
    std::string joined;
    for (std::size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  for (const auto& step : steps_) {
    std::vector<std::string> next;
    switch (step->kind) {
      case Step::Kind::byte_level: {
        std::string bytes;
        for (const std::string& t : tokens) {
          const auto b = from_byte_level(t);
          bytes += b ? *b : t;
        }
        next.push_back(utf8_lossy(bytes));
        break;
      }
      case Step::Kind::metaspace:
        for (std::size_t i = 0; i < tokens.size(); ++i) {
          // The first token loses every replacement character (the prepended one), the others
          // turn them into spaces.
          next.push_back(replace_literal(tokens[i], step->replacement, i == 0 && step->prepend ? "" : " "));
        }
        break;
      case Step::Kind::replace:
        for (const std::string& t : tokens) {
          if (!step->regex) {
            next.push_back(replace_literal(t, step->literal, step->content));
            continue;
          }
          std::string out;
          std::size_t at = 0;
          for (const auto& [b, e] : step->regex->find_all(t)) {
            out.append(t, at, b - at);
            out += step->content;
            at = e;
          }
          out.append(t, at, std::string::npos);
          next.push_back(std::move(out));
        }
        break;
      case Step::Kind::byte_fallback: {
        std::string pending;
        std::size_t pending_count = 0;
        const auto flush = [&] {
          if (pending_count == 0) return;
          if (first_invalid_utf8(pending) == std::string::npos) {
            next.push_back(pending);
          } else {
            for (std::size_t k = 0; k < pending_count; ++k) next.emplace_back(kReplacementChar);
          }
          pending.clear();
          pending_count = 0;
        };
        for (const std::string& t : tokens) {
          if (const auto b = byte_token(t)) {
            pending += static_cast<char>(*b);
            ++pending_count;
          } else {
            flush();
            next.push_back(t);
          }
        }
        flush();
        break;
      }
      case Step::Kind::fuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        next.push_back(std::move(all));
        break;
      }
      case Step::Kind::strip:
        for (const std::string& t : tokens) {
          std::size_t b = 0, e = t.size();
          const std::size_t w = step->strip_char.size();
          for (int k = 0; k < step->start && b + w <= e && t.compare(b, w, step->strip_char) == 0; ++k) b += w;
          for (int k = 0; k < step->stop && e >= b + w && t.compare(e - w, w, step->strip_char) == 0; ++k) e -= w;
          next.push_back(t.substr(b, e - b));
        }
        break;
    }
    tokens = std::move(next);
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace specdec::text
