#include "text/byte_level.hpp"

#include <map>

#include "text/utf8.hpp"

namespace specdec::text {

namespace {

struct ByteLevelMap {
  std::array<std::string, 256> chars;
  std::map<char32_t, std::uint8_t> bytes;
  ByteLevelMap() {
    const auto printable = [](int b) { return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); };
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = printable(b) ? static_cast<char32_t>(b) : next++;
      append_code_point(chars[static_cast<std::size_t>(b)], cp);
      bytes[cp] = static_cast<std::uint8_t>(b);
    }
  }
};

const ByteLevelMap& byte_level_map() {
  static const ByteLevelMap map;
  return map;
}

}  // namespace

const std::string& byte_level_char(std::uint8_t b) { return byte_level_map().chars[b]; }

std::optional<std::uint8_t> byte_level_byte(char32_t cp) {
  const auto& bytes = byte_level_map().bytes;
  const auto it = bytes.find(cp);
  if (it == bytes.end()) return std::nullopt;
  return it->second;
}

std::string to_byte_level(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 2);
  for (unsigned char c : s) out += byte_level_char(c);
  return out;
}

std::optional<std::string> from_byte_level(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    if (n == 0) return std::nullopt;
    const auto b = byte_level_byte(decode_code_point(s, i, n));
    if (!b) return std::nullopt;
    out += static_cast<char>(*b);
    i += n;
  }
  return out;
}

}  // namespace specdec::text
