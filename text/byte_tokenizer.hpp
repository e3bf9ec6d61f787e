#pragma once
// specdec's byte-level vocab.json (reference/io/vocabulary.hpp), the bundled models' vocabulary,
// as a Tokenizer: byte b is token byte_offset + b; a prompt starts with the model config's BOS.
#include <filesystem>
#include <memory>

#include "reference/io/vocabulary.hpp"
#include "text/tokenizer.hpp"

namespace specdec::text {

class ByteTokenizer final : public Tokenizer {
 public:
  // bos: the model config's bos_token_id (< 0: none).
  ByteTokenizer(Vocabulary vocabulary, std::filesystem::path file, int32_t bos);

  std::string description() const override;
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens = true) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const override;
  std::string token_text(int32_t id) const override { return vocabulary_.token_text(id); }
  int32_t size() const override { return vocabulary_.size(); }
  std::optional<int32_t> token_id(const std::string& token) const override { return vocabulary_.special(token); }

 private:
  Vocabulary vocabulary_;
  std::filesystem::path file_;
};

}  // namespace specdec::text
