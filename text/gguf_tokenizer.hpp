#pragma once
// The tokenizer a GGUF file carries in its metadata (tokenizer.ggml.*), rebuilt as the tokenizer
// the model was converted from, so that it gives the same ids:
//   tokenizer.ggml.model "gpt2": byte-level BPE: tokens (ids in order), merges ("a b", rank in
//     order), token_type (3 control -> special added token, 4 user-defined -> added token), and
//     tokenizer.ggml.pre naming how the model's tokenizer splits text before BPE:
//       qwen2 (qwen2.5, qwen-2.5, deepseek-r1-qwen)  NFC, Qwen2's split regex (single digits)
//       llama-bpe (llama3, llama-v3)                 Llama 3's split regex (digits in threes), ignore_merges
//       smollm                                       single digits, then GPT-2's byte-level regex
//       gpt-2 (absent, default)                      GPT-2's byte-level regex
//     Any other name is refused, naming it.
//   tokenizer.ggml.model "llama": SentencePiece BPE (Llama 2, Mistral, TinyLlama): tokens, scores
//     (merge priority) and token types become the tokenizer.model (a SentencePiece ModelProto) the
//     model was converted from, run by libsentencepiece; tokenizer.ggml.add_space_prefix (default
//     true) and remove_extra_whitespaces (default false) set its normalizer.
//   Any other tokenizer.ggml.model is refused, naming it.
// BOS is added to a prompt when tokenizer.ggml.add_bos_token says so (default: false for gpt2,
// true for llama, as llama.cpp does); BOS and the ids that end generation (EOS, EOT, EOM) come
// from the metadata.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reference/io/gguf.hpp"
#include "text/json_fields.hpp"
#include "text/tokenizer.hpp"

namespace specdec::text {

// The tokenizer the metadata describes, as the files a Hugging Face checkpoint would hold it in
// (`specdec convert` writes them beside the weights).
struct GgufTokenizerFiles {
  json tokenizer_json;              // gpt2: a tokenizer.json object; null for llama
  std::string sentencepiece_model;  // llama: a serialized tokenizer.model; empty for gpt2
  bool add_bos = false, add_eos = false;
  std::optional<int32_t> bos;       // tokenizer.ggml.bos_token_id
  std::vector<int32_t> eos;         // EOS, EOT and EOM ids, in that order, without repeats
};

// Throws specdec::Error naming the file and key for metadata it cannot rebuild.
GgufTokenizerFiles gguf_tokenizer_files(const GgufFile& file);

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& file);

}  // namespace specdec::text
