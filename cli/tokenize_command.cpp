// specdec tokenize: a checkpoint's tokenizer on its own — text to ids (and each token's text), or
// ids back to text — for checking a tokenizer against the library that wrote it.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "cli/options.hpp"
#include "reference/core/error.hpp"
#include "reference/io/gguf.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/model_config.hpp"
#include "text/load_tokenizer.hpp"
#include "reference/io/input_file.hpp"
#include "reference/core/input_limits.hpp"

namespace specdec::cli {

namespace {

// A token's text for a table: in double quotes, with backslashes, newlines, tabs and quotes
// escaped (so " " and "\n" are visible), other bytes as printable() shows them.
std::string quoted_token(const std::string& text) {
  std::string escaped;
  for (char c : text) escaped += c == '\\' ? std::string("\\\\") : std::string(1, c);
  std::string out = "\"";
  for (char c : printable(escaped)) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '"') out += "\\\"";
    else out += c;
  }
  return out + "\"";
}

std::vector<int32_t> parse_ids(const std::string& list) {
  std::vector<int32_t> ids;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 0 || v > INT32_MAX) throw Error("--decode: '" + item + "' is not a token id");
    ids.push_back(static_cast<int32_t>(v));
  }
  return ids;
}

}  // namespace

int run_tokenize(const std::vector<std::string>& args, CommandIO& io) {
  std::string model, text, file, decode;
  bool no_special = false, skip_special = false, json = false, stream = false;
  po::options_description desc("tokenize options");
  desc.add_options()
      ("model", po::value(&model)->required(), "checkpoint or tokenizer directory (tokenizer.json, tokenizer.model or vocab.json), or a GGUF file")
      ("text", po::value(&text), "text to encode")
      ("file", po::value(&file), "encode the contents of this file (UTF-8)")
      ("decode", po::value(&decode), "decode these comma-separated token ids instead")
      ("no-special", po::bool_switch(&no_special), "encode without what the tokenizer adds around a prompt (BOS, ...)")
      ("skip-special", po::bool_switch(&skip_special), "decode without special tokens")
      ("stream", po::bool_switch(&stream), "decode as a stream, token by token, as generate --stream prints (--json: the chunks)")
      ("json", po::bool_switch(&json), "print one JSON object");
  if (!parse_options(args, desc, io, "specdec tokenize --model DIR (--text TEXT | --file F | --decode IDS) [options]")) return 0;
  if ((!text.empty()) + (!file.empty()) + (!decode.empty()) != 1) throw Error("give exactly one of --text, --file or --decode");

  const std::filesystem::path dir = model;
  // A GGUF file with weights carries its config (one with a tokenizer alone has none); a
  // directory, or a file in one, may have a config.json.
  const bool gguf = is_gguf_file(dir);
  const std::filesystem::path config = gguf ? dir : (std::filesystem::is_directory(dir) ? dir : dir.parent_path()) / "config.json";
  std::optional<ModelConfig> c;
  if (gguf ? GgufFile(dir).has_tensor("token_embd.weight") : std::filesystem::exists(config)) {
    c = load_checkpoint_config(gguf ? dir : config.parent_path());
  }
  const auto tokenizer = text::load_tokenizer(dir, c ? c->bos_token_id : -1);
  if (!tokenizer) throw Error(model + (gguf ? " carries no tokenizer metadata (tokenizer.ggml.*)" : " has no tokenizer (tokenizer.json, tokenizer.model or vocab.json)"));
  if (c && tokenizer->size() > c->vocab_size) {
    throw Error(tokenizer->description() + " has token ids up to " + std::to_string(tokenizer->size() - 1) + ", but " +
                config.string() + " has vocab_size " + std::to_string(c->vocab_size));
  }

  if (!decode.empty()) {
    const std::vector<int32_t> ids = parse_ids(decode);
    std::vector<std::string> chunks;
    std::string out;
    if (stream) {
      text::TextStream s(*tokenizer, skip_special);
      for (int32_t id : ids) chunks.push_back(s.push(id));
      chunks.push_back(s.finish());
      for (const std::string& c : chunks) out += c;
    } else {
      out = tokenizer->decode(ids, skip_special);
    }
    if (json) {
      nlohmann::json j{{"tokenizer", tokenizer->description()}, {"ids", ids}, {"text", out}};
      if (stream) j["chunks"] = chunks;  // one per token, then what finish() gave
      io.out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      io.out << out << "\n";
    }
    return 0;
  }
  if (!file.empty()) {
    text = read_input_file(file, "--file", kMaxPromptBytes);
  }
  const std::vector<int32_t> ids = tokenizer->encode(text, !no_special);
  std::vector<std::string> tokens;
  for (int32_t id : ids) tokens.push_back(tokenizer->token_text(id));
  if (json) {
    io.out << nlohmann::json{{"tokenizer", tokenizer->description()}, {"ids", ids}, {"tokens", tokens}}.dump(
                  -1, ' ', false, nlohmann::json::error_handler_t::replace)
           << "\n";
    return 0;
  }
  io.out << "tokenizer  " << tokenizer->description() << "\n" << "tokens     " << ids.size() << "\n";
  std::size_t width = 1;  // the ids right-aligned, each token's text quoted so spaces show
  for (int32_t id : ids) width = std::max(width, std::to_string(id).size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string id = std::to_string(ids[i]);
    io.out << "  " << std::string(width - id.size(), ' ') << id << "  " << quoted_token(tokens[i]) << "\n";
  }
  return 0;
}

}  // namespace specdec::cli
