#pragma once
// A tokenizer.json "normalizer": the text transformations applied before pre-tokenization.
// Supported: NFC, NFD, NFKC, NFKD (ICU), Lowercase, Strip, Replace (string or regex), Prepend,
// Sequence. Others (BertNormalizer, Precompiled, ...) are refused by name.
#include <memory>
#include <string>
#include <vector>

#include "text/json_fields.hpp"

namespace specdec::text {

class Normalizer {
 public:
  Normalizer();  // the identity (a null normalizer)
  static Normalizer parse(const json& j, const JsonPlace& place);
  ~Normalizer();
  Normalizer(Normalizer&&) noexcept;
  Normalizer& operator=(Normalizer&&) noexcept;

  std::string apply(std::string s) const;
  bool is_identity() const { return steps_.empty(); }

 private:
  struct Step;
  std::vector<std::unique_ptr<Step>> steps_;
  static void parse_into(const json& j, const JsonPlace& place, Normalizer& out);
};

}  // namespace specdec::text
