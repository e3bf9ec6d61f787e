#pragma once
// A Hugging Face tokenizer.json (the `tokenizers` library's format, which transformers writes):
//   added tokens -> normalizer -> pre-tokenizer -> model (BPE | Unigram) -> post-processor
// and back through the decoder. What each component supports is in its header; a component
// specdec does not implement is refused with the field that names it. Encoding gives the ids
// `tokenizers` gives, which the cross-library tests check on a varied corpus.
#include <filesystem>
#include <memory>

#include "text/added_vocabulary.hpp"
#include "text/normalizer.hpp"
#include "text/pre_tokenizer.hpp"
#include "text/token_decoder.hpp"
#include "text/token_model.hpp"
#include "text/tokenizer.hpp"

namespace specdec::text {

// What encode(add_special_tokens = true) puts around the text: ids before and after.
struct SpecialTemplate {
  std::vector<int32_t> before, after;
};

class HfTokenizer final : public Tokenizer {
 public:
  // Reads dir/tokenizer.json and, when present, tokenizer_config.json (bos_token, eos_token,
  // add_bos_token, add_eos_token) and generation_config.json (bos_token_id, eos_token_id).
  static std::unique_ptr<HfTokenizer> load(const std::filesystem::path& dir);
  // A tokenizer.json object held in memory (GGUF files carry theirs as metadata, which
  // gguf_tokenizer.hpp turns into one); `source` names it in messages and the description.
  static std::unique_ptr<HfTokenizer> parse(const json& j, const std::string& source);
  // The ids generation starts and stops with, where the caller knows them better than the JSON.
  void set_special_ids(std::optional<int32_t> bos, std::vector<int32_t> eos) {
    bos_ = bos;
    eos_ = std::move(eos);
  }

  std::string description() const override;
  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens = true) const override;
  std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const override;
  std::string token_text(int32_t id) const override;
  int32_t size() const override;
  std::optional<int32_t> token_id(const std::string& token) const override;

  const SpecialTemplate& special_template() const { return template_; }

 private:
  HfTokenizer() = default;
  // `left`: the bytes the normalizer may still produce in this encoding (see encode).
  void encode_text(const std::string& text, std::size_t offset, std::vector<int32_t>& out, uint64_t& left) const;
  std::optional<std::string> token_string(int32_t id) const;  // the added token's content or the model's token

  std::string file_;
  AddedVocabulary added_;
  Normalizer normalizer_;
  PreTokenizer pre_tokenizer_;
  std::unique_ptr<TokenModel> model_;
  TokenDecoder decoder_;
  SpecialTemplate template_;
  bool byte_level_ = false;  // tokens are byte-level strings (for token_text)
};

}  // namespace specdec::text
