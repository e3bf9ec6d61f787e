#pragma once
// The pre-tokenizer and normalizer regular expressions of tokenizer.json, compiled with
// Oniguruma: the engine Hugging Face tokenizers itself uses, so that \p{L}, \s, lookahead and case
// folding mean exactly what they mean there.
//
// A pattern comes from the tokenizer file, so it may be one that backtracks exponentially or scans
// the rest of the text at every position (`.(?=.*b)` takes minutes over 100 KB). Two bounds make
// such a pattern an error naming it instead of a hang:
// - each search may backtrack at most kRetriesBase + kRetriesPerByte * (text bytes) times
//   (Oniguruma's retry limits, in one match attempt and in one search): real tokenizers' patterns
//   backtrack about once per byte at worst (Llama-3's `\s*[\r\n]+` over a run of spaces);
// - all the searches of one encoding (a RegexTimeBudget) or of one find_all together may take at
//   most kSearchSecondsBase + (text bytes) / kSearchBytesPerSecond seconds. A pattern that scans
//   ahead does not backtrack, and Oniguruma counts nothing else, so this bound is one of time:
//   real patterns search at 10 MB/s or more, 40 times the rate the bound asks for.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace specdec::text {

inline constexpr unsigned long kRetriesBase = 1000000;
inline constexpr unsigned long kRetriesPerByte = 16;
inline constexpr double kSearchSecondsBase = 1.0;
inline constexpr double kSearchBytesPerSecond = 256.0 * 1024;

class Regex {
 public:
  // Throws specdec::Error naming `where` and Oniguruma's message if the pattern does not compile;
  // `where` also names the pattern in search errors.
  Regex(const std::string& pattern, const std::string& where);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Every non-overlapping match, left to right, as byte ranges [begin, end) of s. Throws
  // specdec::Error naming the pattern when the search exceeds its limits (see above).
  std::vector<std::pair<std::size_t, std::size_t>> find_all(std::string_view s) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  std::string pattern_;
  std::string where_;
  std::unique_ptr<Compiled> compiled_;
};

// While one lives, every regex search on this thread shares its deadline: the time allowed for
// encoding a text of `input_bytes` bytes, however many pieces and patterns it goes through (or
// `allowed` from now). A budget inside another ends no later than the outer one.
class RegexTimeBudget {
 public:
  explicit RegexTimeBudget(std::size_t input_bytes);
  explicit RegexTimeBudget(std::chrono::steady_clock::duration allowed);
  ~RegexTimeBudget();
  RegexTimeBudget(const RegexTimeBudget&) = delete;
  RegexTimeBudget& operator=(const RegexTimeBudget&) = delete;

  static std::chrono::steady_clock::time_point deadline_for(std::size_t input_bytes);
  // The innermost live budget's deadline on this thread; nullptr when none.
  static const std::chrono::steady_clock::time_point* current();

 private:
  std::chrono::steady_clock::time_point deadline_;
  const RegexTimeBudget* outer_;
};

// Byte ranges of every occurrence of a literal (non-empty) string, left to right.
std::vector<std::pair<std::size_t, std::size_t>> find_all_literal(std::string_view s, std::string_view literal);

}  // namespace specdec::text
