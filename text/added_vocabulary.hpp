#pragma once
// tokenizer.json's "added_tokens": tokens matched in the text before the model sees it (special
// tokens such as <|begin_of_text|>, and user-added ones). Matching follows Hugging Face: the
// leftmost match, the longest at a position; single_word tokens only between non-word characters;
// lstrip/rstrip tokens swallow the whitespace beside them. Tokens with normalized = false are
// matched in the raw text, the others in the normalized text.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "text/json_fields.hpp"
#include "text/normalizer.hpp"

namespace specdec::text {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
  std::string pattern;  // what is matched: the content, normalized when `normalized` is set
};

// A stretch of text: an added token (id >= 0) or text for the model (id < 0).
struct TextSegment {
  std::string text;
  int32_t id = -1;
  std::size_t offset = 0;  // byte offset in the text that was split
};

class AddedVocabulary {
 public:
  static AddedVocabulary parse(const json& list, const JsonPlace& place);
  // Matches normalized tokens by their content as the normalizer makes it (e.g. "▁café" for
  // "café" under a Prepend("▁") normalizer), as Hugging Face does.
  void normalize_patterns(const Normalizer& normalizer);
  // Splits at the tokens whose `normalized` flag equals `normalized_tokens`.
  std::vector<TextSegment> split(const std::string& text, bool normalized_tokens) const;

  const AddedToken* by_id(int32_t id) const;
  std::optional<int32_t> id_of(const std::string& content) const;
  int32_t max_id() const { return by_id_.empty() ? -1 : by_id_.rbegin()->first; }

 private:
  std::map<int32_t, AddedToken> by_id_;
  std::map<std::string, int32_t> by_content_;
};

}  // namespace specdec::text
