#pragma once
// Text <-> token ids for a checkpoint, whichever way it stores its vocabulary: a Hugging Face
// tokenizer.json (hf_tokenizer.hpp), a SentencePiece tokenizer.model (sentencepiece_tokenizer.hpp)
// or specdec's byte-level vocab.json (byte_tokenizer.hpp). load_tokenizer.hpp finds the one a
// checkpoint directory has.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace specdec::text {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // What it is and which file it came from, e.g. "tokenizer.json: BPE, byte-level, 32000 tokens".
  virtual std::string description() const = 0;
  // The ids of `text` (UTF-8). With add_special_tokens, also what the checkpoint puts around a
  // prompt (typically BOS), as its own library's tokenizer(text) does.
  virtual std::vector<int32_t> encode(const std::string& text, bool add_special_tokens = true) const = 0;
  // The text of `ids`, as the checkpoint's library decodes them; special tokens appear as their
  // names unless skipped.
  virtual std::string decode(const std::vector<int32_t>& ids, bool skip_special_tokens = false) const = 0;
  // One token shown on its own (explain pages, reports): its text with its spaces, a byte that is
  // not a whole character as "<0xAB>", an id outside the vocabulary as "<id>".
  virtual std::string token_text(int32_t id) const = 0;
  // Largest token id + 1: the smallest vocab_size a model needs to use this tokenizer.
  virtual int32_t size() const = 0;
  // The id a token string has (special tokens included), if any.
  virtual std::optional<int32_t> token_id(const std::string& token) const = 0;

  std::optional<int32_t> bos_id() const { return bos_; }
  const std::vector<int32_t>& eos_ids() const { return eos_; }

 protected:
  std::optional<int32_t> bos_;
  std::vector<int32_t> eos_;
};

// "<id>": how token_text shows an id outside the vocabulary.
std::string id_text(int32_t id);

// Text decoded as tokens arrive, never cut inside a UTF-8 character: push() returns the text that
// became final with each token (nothing while a character is still incomplete), finish() the rest.
// Each push decodes a short window (the tokens since the text last settled, after the chunk
// before them as context), so that decoders that treat the first token specially (Metaspace,
// Strip) give what decoding everything at once gives, in time linear in the length.
class TextStream {
 public:
  explicit TextStream(const Tokenizer& tokenizer, bool skip_special_tokens = false)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}
  std::string push(int32_t id);
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  std::size_t prefix_ = 0;  // the context window starts here ...
  std::size_t read_ = 0;    // ... and its text up to here was already returned
};

}  // namespace specdec::text
