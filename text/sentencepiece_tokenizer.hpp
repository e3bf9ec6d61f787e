#pragma once
// A SentencePiece tokenizer.model (Llama-2, Mistral, TinyLlama and others ship one), run by
// Debian's libsentencepiece, so the ids are SentencePiece's own. BOS is added to a prompt unless
// tokenizer_config.json says "add_bos_token": false (and EOS when "add_eos_token": true), as
// transformers' Llama tokenizer does. Control tokens in the text are not special here: only a
// tokenizer.json matches "<s>" in a prompt as the token.
#include <filesystem>
#include <memory>

#include "text/tokenizer.hpp"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace specdec::text {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  static std::unique_ptr<SentencePieceTokenizer> load(const std::filesystem::path& dir);
  // A model held in memory as a serialized ModelProto (gguf_tokenizer.cpp builds one from GGUF
  // metadata); `source` names it in messages and the description.
  static std::unique_ptr<SentencePieceTokenizer> from_serialized(const std::string& model_proto, const std::string& source,
                                                                 bool add_bos, bool add_eos);
  ~SentencePieceTokenizer() override;

  std::string description() const override;
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens = true) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const override;
  std::string token_text(int32_t id) const override;
  int32_t size() const override;
  std::optional<int32_t> token_id(const std::string& token) const override;

 private:
  SentencePieceTokenizer();
  std::string file_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  bool add_bos_ = true, add_eos_ = false;
};

}  // namespace specdec::text
