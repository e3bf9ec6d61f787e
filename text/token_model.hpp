#pragma once
// A tokenizer.json "model": turns one pre-tokenized piece into token ids. BPE (merges by rank,
// byte fallback, unknown-token fusing, ignore_merges, subword prefix/suffix) and Unigram (Viterbi
// over piece scores, byte fallback) are supported; WordPiece and WordLevel are refused by name.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "text/json_fields.hpp"

namespace specdec::text {

class TokenModel {
 public:
  virtual ~TokenModel() = default;
  static std::unique_ptr<TokenModel> parse(const json& j, const JsonPlace& place);

  virtual std::string type() const = 0;  // "BPE" | "Unigram"
  virtual void tokenize(const std::string& piece, std::vector<int32_t>& out) const = 0;
  virtual std::optional<int32_t> token_to_id(const std::string& token) const = 0;
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  virtual int32_t max_id() const = 0;  // largest id of the vocabulary
};

// "<0xAB>": the byte-fallback token of byte 0xAB.
std::string byte_fallback_token(unsigned char byte);

}  // namespace specdec::text
