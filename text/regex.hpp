#pragma once
// The pre-tokenizer and normalizer regular expressions of tokenizer.json, compiled with
// Oniguruma: the engine Hugging Face tokenizers itself uses, so that \p{L}, \s, lookahead and case
// folding mean exactly what they mean there.
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace specdec::text {

class Regex {
 public:
  // Throws specdec::Error naming `where` and Oniguruma's message if the pattern does not compile.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Every non-overlapping match, left to right, as byte ranges [begin, end) of s.
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view s) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  std::unique_ptr<Compiled> compiled_;
};

// Byte ranges of every occurrence of a literal (non-empty) string, left to right.
std::vector<std::pair<std::size_t, std::size_t>> find_all_literal(std::string_view s, std::string_view literal);

}  // namespace specdec::text
