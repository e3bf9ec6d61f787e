#pragma once
// UTF-8 helpers the tokenizers share: walking code points, validation, the lossy conversion that
// Hugging Face decoding applies (Rust's String::from_utf8_lossy: each maximal invalid subpart
// becomes U+FFFD), and Unicode whitespace.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace specdec::text {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 if none starts there.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);
// Byte offset of the first byte that does not begin a well-formed sequence, or npos if s is valid.
std::size_t first_invalid_utf8(std::string_view s);
// The code point of the well-formed sequence at s[i] (its length from utf8_sequence_length).
char32_t decode_code_point(std::string_view s, std::size_t i, std::size_t length);
void append_code_point(std::string& out, char32_t cp);
// s with every maximal invalid subpart replaced by U+FFFD.
std::string utf8_lossy(std::string_view s);
// Whether s ends inside a sequence that more bytes could complete (e.g. "\xE2\x82").
bool ends_with_incomplete_utf8(std::string_view s);
// Unicode White_Space (Rust's char::is_whitespace).
bool is_unicode_whitespace(char32_t cp);
// Throws specdec::Error naming `what` and the byte offset if s is not valid UTF-8.
void require_valid_utf8(std::string_view s, const std::string& what);

}  // namespace specdec::text
