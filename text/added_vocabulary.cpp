#include "text/added_vocabulary.hpp"

#include <unicode/uchar.h>

#include "text/utf8.hpp"

namespace specdec::text {

AddedVocabulary AddedVocabulary::parse(const json& list, const JsonPlace& place) {
  AddedVocabulary v;
  if (list.is_null()) return v;
  if (!list.is_array()) place.fail("must be a list");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const JsonPlace p = place.index(i);
    const json& t = list[i];
    if (!t.is_object()) p.fail("must be an object");
    AddedToken a;
    a.id = token_id_value(required_member(t, "id", p), p.at("id"));
    a.content = string_member(t, "content", p);
    if (a.content.empty()) p.at("content").fail("is empty");
    require_valid_utf8(a.content, p.at("content").where());
    a.single_word = bool_member(t, "single_word", false, p);
    a.lstrip = bool_member(t, "lstrip", false, p);
    a.rstrip = bool_member(t, "rstrip", false, p);
    a.normalized = bool_member(t, "normalized", true, p);
    a.special = bool_member(t, "special", false, p);
    a.pattern = a.content;
    if (v.by_id_.count(a.id)) p.at("id").fail("repeats the id " + std::to_string(a.id));
    v.by_content_[a.content] = a.id;
    v.by_id_[a.id] = std::move(a);
  }
  return v;
}

void AddedVocabulary::normalize_patterns(const Normalizer& normalizer) {
  // One limit for all the tokens together: a normalizer that grows each of 100,000 tokens a
  // little would otherwise grow the whole list without bound.
  uint64_t contents = 0;
  for (const auto& [id, t] : by_id_) contents += t.content.size();
  uint64_t left = expansion_limit(contents);
  for (auto& [id, t] : by_id_) {
    if (t.normalized) {
      t.pattern = normalizer.apply(t.content, left);
      left -= t.pattern.size();
    }
    if (t.pattern.empty()) t.pattern = t.content;
  }
}

const AddedToken* AddedVocabulary::by_id(int32_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &it->second;
}

std::optional<int32_t> AddedVocabulary::id_of(const std::string& content) const {
  const auto it = by_content_.find(content);
  return it == by_content_.end() ? std::nullopt : std::optional<int32_t>(it->second);
}

namespace {

// Rust's char::is_alphanumeric or '_': what a single_word token may not touch.
bool is_word_char(char32_t cp) { return cp == '_' || u_isalnum(static_cast<UChar32>(cp)); }

// The code point that ends just before byte `end`, and its start.
std::pair<char32_t, std::size_t> char_before(const std::string& s, std::size_t end) {
  std::size_t start = end - 1;
  while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
  const std::size_t n = utf8_sequence_length(s, start);
  return {n ? decode_code_point(s, start, n) : 0xFFFD, start};
}

}  // namespace

std::vector<TextSegment> AddedVocabulary::split(const std::string& text, bool normalized_tokens) const {
  std::vector<TextSegment> out;
  std::size_t done = 0;  // text before this is already in `out`
  std::size_t at = 0;    // where to look for the next match
  while (at < text.size()) {
    // Leftmost match; the longest at that position.
    const AddedToken* best = nullptr;
    std::size_t best_pos = std::string::npos;
    for (const auto& [id, t] : by_id_) {
      if (t.normalized != normalized_tokens) continue;
      for (std::size_t p = text.find(t.pattern, at); p != std::string::npos; p = text.find(t.pattern, p + 1)) {
        if (p > best_pos) break;
        bool ok = true;
        if (t.single_word) {
          const std::size_t e = p + t.pattern.size();
          const bool left_ok = p == 0 || !is_word_char(char_before(text, p).first);
          bool right_ok = e == text.size();
          if (!right_ok) {
            const std::size_t n = utf8_sequence_length(text, e);
            right_ok = !is_word_char(n ? decode_code_point(text, e, n) : 0xFFFD);
          }
          ok = left_ok && right_ok;
        }
        if (ok) {
          if (p < best_pos || (p == best_pos && t.pattern.size() > best->pattern.size())) {
            best = &t;
            best_pos = p;
          }
          break;
        }
      }
    }
    if (!best) break;
    std::size_t start = best_pos, stop = best_pos + best->pattern.size();
    if (best->lstrip) {
      while (start > done) {
        const auto [cp, s] = char_before(text, start);
        if (!is_unicode_whitespace(cp)) break;
        start = s;
      }
    }
    if (best->rstrip) {
      while (stop < text.size()) {
        const std::size_t n = utf8_sequence_length(text, stop);
        if (n == 0 || !is_unicode_whitespace(decode_code_point(text, stop, n))) break;
        stop += n;
      }
    }
    if (start > done) out.push_back({text.substr(done, start - done), -1, done});
    out.push_back({text.substr(start, stop - start), best->id, start});
    done = at = stop;
  }
  if (done < text.size()) out.push_back({text.substr(done), -1, done});
  return out;
}

}  // namespace specdec::text
