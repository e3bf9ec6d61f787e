#pragma once
// GPT-2's byte <-> character map (byte-level BPE): every byte 0..255 is shown as one printable
// code point, so that any byte string is a string of "characters" BPE can merge. Printable ASCII
// and Latin-1 map to themselves; the other 68 bytes to U+0100.. in order (space is 'Ġ' U+0120).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace specdec::text {

// The UTF-8 text of byte b's character.
const std::string& byte_level_char(std::uint8_t b);
// The byte a code point stands for, if it is one of the 256.
std::optional<std::uint8_t> byte_level_byte(char32_t cp);
// Every byte of s as its character.
std::string to_byte_level(std::string_view s);
// The bytes a byte-level string stands for; nullopt if a character is not one of the 256.
std::optional<std::string> from_byte_level(std::string_view s);

}  // namespace specdec::text
