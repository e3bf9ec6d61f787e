#pragma once
// The tokenizer a checkpoint has: a GGUF file's own (gguf_tokenizer.hpp), or the one beside its
// config.json, looked for in this order: tokenizer.json (Hugging Face), tokenizer.model
// (SentencePiece), vocab.json (specdec's bytes).
#include <filesystem>
#include <memory>

#include "text/tokenizer.hpp"

namespace specdec::text {

// model_path: a checkpoint directory, a .safetensors file in one, or a GGUF file. bos: the model config's
// bos_token_id, which only the byte vocabulary uses. nullptr when the checkpoint has none.
// Throws specdec::Error naming the file and field for a tokenizer that cannot be read.
std::unique_ptr<Tokenizer> load_tokenizer(const std::filesystem::path& model_path, int32_t bos);

}  // namespace specdec::text
