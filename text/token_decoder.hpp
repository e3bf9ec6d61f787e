#pragma once
// A tokenizer.json "decoder": token strings back to text. Supported: ByteLevel, Metaspace,
// Replace, ByteFallback, Fuse, Strip, Sequence; without a decoder, tokens are joined by spaces
// (as Hugging Face does). Others are refused by name.
#include <memory>
#include <string>
#include <vector>

#include "text/json_fields.hpp"

namespace specdec::text {

class TokenDecoder {
 public:
  TokenDecoder();  // a null decoder
  static TokenDecoder parse(const json& j, const JsonPlace& place);
  ~TokenDecoder();
  TokenDecoder(TokenDecoder&&) noexcept;
  TokenDecoder& operator=(TokenDecoder&&) noexcept;

  std::string decode(std::vector<std::string> tokens) const;

 private:
  struct Step;
  std::vector<std::unique_ptr<Step>> steps_;
  bool null_ = true;
  static void parse_into(const json& j, const JsonPlace& place, TokenDecoder& out);
};

}  // namespace specdec::text
