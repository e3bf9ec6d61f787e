#include "text/gguf_tokenizer.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <string>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "text/hf_tokenizer.hpp"
#include "text/sentencepiece_tokenizer.hpp"

namespace specdec::text {
namespace {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type, SentencePiece's piece types).
constexpr int64_t kControl = 3;
constexpr int64_t kUserDefined = 4;

// The split regexes of the models' tokenizer.json files.
constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kLlama3Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

json byte_level(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", use_regex}};
}

json split_then_bytes(const char* regex) {
  return {{"type", "Sequence"},
          {"pretokenizers",
           json::array({{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}, {"invert", false}},
                        byte_level(false)})}};
}

// What tokenizer.ggml.pre says about the steps before BPE.
struct PreSteps {
  json normalizer;
  json pre_tokenizer;
  bool ignore_merges = false;
};

PreSteps pre_steps(const std::string& pre, const std::string& file) {
  PreSteps s;
  if (pre == "qwen2" || pre == "qwen2.5" || pre == "qwen-2.5" || pre == "deepseek-r1-qwen") {
    s.normalizer = {{"type", "NFC"}};
    s.pre_tokenizer = split_then_bytes(kQwen2Split);
  } else if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    s.pre_tokenizer = split_then_bytes(kLlama3Split);
    s.ignore_merges = true;
  } else if (pre == "smollm") {
    s.pre_tokenizer = {{"type", "Sequence"},
                       {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", true}}, byte_level(true)})}};
  } else if (pre == "gpt-2" || pre == "gpt2" || pre == "default" || pre.empty()) {
    s.pre_tokenizer = byte_level(true);
  } else {
    throw Error(file + ": metadata 'tokenizer.ggml.pre' is '" + pre +
                "', a pre-tokenizer specdec does not rebuild (it knows qwen2, llama-bpe, smollm and gpt-2); "
                "use the model's tokenizer.json instead");
  }
  return s;
}

std::optional<int32_t> token_id_key(const GgufFile& f, const char* key, std::size_t n_tokens) {
  const auto id = f.get_int(key);
  if (!id) return std::nullopt;
  if (*id < 0 || static_cast<uint64_t>(*id) >= n_tokens) {
    throw Error(f.path().string() + ": metadata '" + key + "' is " + std::to_string(*id) + ", not a token id (the vocabulary has " +
                std::to_string(n_tokens) + ")");
  }
  return static_cast<int32_t>(*id);
}

// Protocol buffer encoding, the little of it a SentencePiece ModelProto needs.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7F) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void field_varint(std::string& out, int field, uint64_t v) {
  varint(out, static_cast<uint64_t>(field) << 3);
  varint(out, v);
}
void field_bytes(std::string& out, int field, const std::string& bytes) {
  varint(out, (static_cast<uint64_t>(field) << 3) | 2);
  varint(out, bytes.size());
  out += bytes;
}
void field_float(std::string& out, int field, float v) {
  varint(out, (static_cast<uint64_t>(field) << 3) | 5);
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  for (int k = 0; k < 4; ++k) out += static_cast<char>((bits >> (8 * k)) & 0xFF);
}

// sentencepiece_model.proto: ModelProto {1: repeated SentencePiece pieces {1 piece, 2 score,
// 3 type}, 2: TrainerSpec {3 model_type (BPE = 2), 35 byte_fallback, 40 unk_id, 41 bos_id,
// 42 eos_id, 43 pad_id}, 3: NormalizerSpec {1 name, 3 add_dummy_prefix, 4 remove_extra_whitespaces,
// 5 escape_whitespaces}}. The piece types are GGUF's token types (both are SentencePiece's).
std::string sentencepiece_proto(const GgufFile& f, const std::vector<std::string>& tokens, const std::vector<int64_t>& types) {
  const std::string file = f.path().string();
  const auto scores = f.get_floats("tokenizer.ggml.scores");
  if (!scores) throw Error(file + ": metadata 'tokenizer.ggml.scores' is missing (a llama tokenizer merges by score)");
  if (scores->size() != tokens.size()) {
    throw Error(file + ": tokenizer.ggml.scores has " + std::to_string(scores->size()) + " entries for " +
                std::to_string(tokens.size()) + " tokens");
  }
  std::string proto;
  int64_t unk = -1;
  bool bytes = false;
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    const int64_t type = types.empty() ? 1 : types[id];
    if (type < 1 || type > 6) {
      throw Error(file + ": tokenizer.ggml.token_type[" + std::to_string(id) + "] is " + std::to_string(type) +
                  " (expected 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused or 6 byte)");
    }
    if (type == 2 && unk < 0) unk = static_cast<int64_t>(id);
    bytes = bytes || type == 6;
    std::string piece;
    field_bytes(piece, 1, tokens[id]);
    field_float(piece, 2, static_cast<float>((*scores)[id]));
    field_varint(piece, 3, static_cast<uint64_t>(type));
    field_bytes(proto, 1, piece);
  }
  if (unk < 0) throw Error(file + ": the llama tokenizer has no token of type 2 (unknown), which SentencePiece requires");
  const auto id_or = [&](const char* key) -> int64_t {
    const auto id = token_id_key(f, key, tokens.size());
    return id ? *id : -1;
  };
  std::string trainer;
  field_varint(trainer, 3, 2);  // BPE
  field_varint(trainer, 35, bytes ? 1 : 0);
  field_varint(trainer, 40, static_cast<uint64_t>(unk));
  // SentencePiece stores ids as int32; -1 (none) is the 64-bit two's complement varint.
  field_varint(trainer, 41, static_cast<uint64_t>(id_or("tokenizer.ggml.bos_token_id")));
  field_varint(trainer, 42, static_cast<uint64_t>(id_or("tokenizer.ggml.eos_token_id")));
  field_varint(trainer, 43, static_cast<uint64_t>(id_or("tokenizer.ggml.padding_token_id")));
  field_bytes(proto, 2, trainer);
  std::string normalizer;
  field_bytes(normalizer, 1, "identity");
  field_varint(normalizer, 3, f.get_bool("tokenizer.ggml.add_space_prefix").value_or(true) ? 1 : 0);
  field_varint(normalizer, 4, f.get_bool("tokenizer.ggml.remove_extra_whitespaces").value_or(false) ? 1 : 0);
  field_varint(normalizer, 5, 1);
  field_bytes(proto, 3, normalizer);
  return proto;
}

json gpt2_tokenizer_json(const GgufFile& f, const std::vector<std::string>& tokens, const std::vector<int64_t>& types,
                         std::optional<int32_t> bos, bool add_bos) {
  const std::string file = f.path().string();
  const auto merges = f.get_strings("tokenizer.ggml.merges");
  if (!merges) throw Error(file + ": metadata 'tokenizer.ggml.merges' is missing (a gpt2 tokenizer needs its merges)");
  const PreSteps pre = pre_steps(f.get_string("tokenizer.ggml.pre").value_or(""), file);
  json vocab = json::object();
  json added = json::array();
  for (std::size_t id = 0; id < tokens.size(); ++id) {
    const std::string& t = tokens[id];
    const int64_t type = types.empty() ? 1 : types[id];
    if (type == kControl || type == kUserDefined) {
      added.push_back({{"id", id}, {"content", t}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}, {"special", type == kControl}});
    }
    // A repeated token string keeps its first id, as the `tokenizers` library's vocabulary would.
    if (!vocab.contains(t)) vocab[t] = id;
  }
  json j = {{"version", "1.0"},
            {"added_tokens", added},
            {"normalizer", pre.normalizer},
            {"pre_tokenizer", pre.pre_tokenizer},
            {"post_processor", nullptr},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
            {"model",
             {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
              {"ignore_merges", pre.ignore_merges}, {"vocab", std::move(vocab)}, {"merges", *merges}}}};
  if (add_bos) {
    if (!bos) throw Error(file + ": tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is missing");
    const std::string& name = tokens[static_cast<std::size_t>(*bos)];
    j["post_processor"] = {{"type", "TemplateProcessing"},
                           {"single", json::array({{{"SpecialToken", {{"id", name}, {"type_id", 0}}}},
                                                   {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                           {"pair", json::array()},
                           {"special_tokens", {{name, {{"id", name}, {"ids", json::array({*bos})}, {"tokens", json::array({name})}}}}}};
  }
  return j;
}

}  // namespace

GgufTokenizerFiles gguf_tokenizer_files(const GgufFile& f) {
  const std::string file = f.path().string();
  const auto model = f.get_string("tokenizer.ggml.model");
  if (!model) throw Error(file + ": metadata 'tokenizer.ggml.model' is missing: the file carries no tokenizer");
  if (*model != "gpt2" && *model != "llama") {
    throw Error(file + ": tokenizer.ggml.model '" + *model +
                "' is not rebuilt from GGUF metadata (specdec rebuilds gpt2, byte-level BPE, and llama, SentencePiece BPE); "
                "pass the model's tokenizer.json or tokenizer.model directory instead");
  }
  const auto tokens = f.get_strings("tokenizer.ggml.tokens");
  if (!tokens) throw Error(file + ": metadata 'tokenizer.ggml.tokens' is missing");
  if (tokens->empty() || static_cast<int64_t>(tokens->size()) - 1 > kMaxTokenId) {
    throw Error(file + ": tokenizer.ggml.tokens has " + std::to_string(tokens->size()) + " tokens (expected 1 to " +
                std::to_string(kMaxTokenId + 1) + ")");
  }
  const std::vector<int64_t> types = f.get_ints("tokenizer.ggml.token_type").value_or(std::vector<int64_t>{});
  if (!types.empty() && types.size() != tokens->size()) {
    throw Error(file + ": tokenizer.ggml.token_type has " + std::to_string(types.size()) + " entries for " +
                std::to_string(tokens->size()) + " tokens");
  }
  GgufTokenizerFiles out;
  out.bos = token_id_key(f, "tokenizer.ggml.bos_token_id", tokens->size());
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    if (const auto id = token_id_key(f, key, tokens->size()); id && std::find(out.eos.begin(), out.eos.end(), *id) == out.eos.end()) {
      out.eos.push_back(*id);
    }
  }
  const bool spm = *model == "llama";
  out.add_bos = f.get_bool("tokenizer.ggml.add_bos_token").value_or(spm);
  out.add_eos = f.get_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (spm) {
    out.sentencepiece_model = sentencepiece_proto(f, *tokens, types);
  } else {
    if (out.add_eos) throw Error(file + ": tokenizer.ggml.add_eos_token is true, which specdec does not rebuild for gpt2 tokenizers");
    out.tokenizer_json = gpt2_tokenizer_json(f, *tokens, types, out.bos, out.add_bos);
  }
  return out;
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& f) {
  GgufTokenizerFiles g = gguf_tokenizer_files(f);
  const std::string source = f.path().string() + " (GGUF tokenizer metadata)";
  if (!g.sentencepiece_model.empty()) {
    std::unique_ptr<SentencePieceTokenizer> t = SentencePieceTokenizer::from_serialized(g.sentencepiece_model, source, g.add_bos, g.add_eos);
    return t;
  }
  std::unique_ptr<HfTokenizer> t = HfTokenizer::parse(g.tokenizer_json, source);
  t->set_special_ids(g.bos, std::move(g.eos));
  return t;
}

}  // namespace specdec::text
