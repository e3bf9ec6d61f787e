#include "text/load_tokenizer.hpp"

#include "reference/io/gguf.hpp"
#include "text/byte_tokenizer.hpp"
#include "text/gguf_tokenizer.hpp"
#include "text/hf_tokenizer.hpp"
#include "text/sentencepiece_tokenizer.hpp"

namespace specdec::text {

std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_path, int32_t bos) {
  if (is_gguf_file(model_path)) {
    const GgufFile file(model_path);
    return file.find("tokenizer.ggml.model") ? load_gguf_tokenizer(file) : nullptr;
  }
  const std::filesystem::path dir = std::filesystem::is_directory(model_path) ? model_path : model_path.parent_path();
  if (std::filesystem::exists(dir / "tokenizer.json")) return HfTokenizer::load(dir);
  if (std::filesystem::exists(dir / "tokenizer.model")) return SentencePieceTokenizer::load(dir);
  if (std::filesystem::exists(dir / "vocab.json")) return std::make_unique<ByteTokenizer>(Vocabulary::load(dir / "vocab.json"), dir / "vocab.json", bos);
  return nullptr;
}

}  // namespace specdec::text
