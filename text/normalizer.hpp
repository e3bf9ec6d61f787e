#pragma once
// A tokenizer.json "normalizer": the text transformations applied before pre-tokenization.
// Supported: NFC, NFD, NFKC, NFKD (ICU), Lowercase, Strip, Replace (string or regex), Prepend,
// Sequence. Others (BertNormalizer, Precompiled, ...) are refused by name.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/json_fields.hpp"

namespace specdec::text {

// How long a tokenizer may make a text of `input_bytes` bytes (normalized, or pre-tokenized):
// input_bytes * kMaxTokenizerExpansion + kMaxTokenizerExpansionSlack, saturating instead of
// overflowing.
uint64_t expansion_limit(uint64_t input_bytes);

class Normalizer {
 public:
  Normalizer();  // the identity (a null normalizer)
  static Normalizer parse(const json& j, const JsonPlace& place);
  ~Normalizer();
  Normalizer(Normalizer&&) noexcept;
  Normalizer& operator=(Normalizer&&) noexcept;

  // The normalized text. Throws specdec::Error naming the step when the text grows beyond
  // `max_bytes` (checked after every step, and before a Replace or Prepend builds a longer one):
  // a few Replace steps can multiply a text's length by 100 each.
  std::string apply(std::string s, uint64_t max_bytes) const;
  // With the limit for a text of s.size() bytes, expansion_limit(s.size()).
  std::string apply(std::string s) const;
  bool is_identity() const { return steps_.empty(); }

 private:
  struct Step;
  std::vector<std::unique_ptr<Step>> steps_;
  static void parse_into(const json& j, const JsonPlace& place, Normalizer& out);
};

}  // namespace specdec::text
