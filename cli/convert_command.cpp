// specdec convert: a model as specdec reads it (a GGUF file, a Hugging Face checkpoint) written
// out as a Hugging Face checkpoint: config.json, model.safetensors (or shards), and the
// tokenizer. From GGUF the weights are the dequantized ones specdec runs, the q/k rows in Hugging
// Face's order, and the tokenizer is the tokenizer.json its metadata describes; transformers
// loads the result as it is.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>

#include "cli/options.hpp"
#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/gguf.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/io/safetensors.hpp"
#include "text/gguf_tokenizer.hpp"

namespace specdec::cli {

namespace {

namespace fs = std::filesystem;

// The tokenizer files a Hugging Face checkpoint directory may hold, copied as they are.
constexpr const char* kTokenizerFiles[] = {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                                           "tokenizer.model", "vocab.json", "generation_config.json"};

// Dtype names as --dtype takes them, from a config's torch_dtype.
std::string dtype_of(const std::string& torch_dtype) {
  if (torch_dtype == "bfloat16") return "BF16";
  if (torch_dtype == "float16") return "F16";
  return "F32";
}

// Writes the tokenizer of `source` into `dir`; returns what was written, for the report.
std::string write_tokenizer(const fs::path& source, const fs::path& dir) {
  if (is_gguf_file(source)) {
    const GgufFile f(source);
    if (!f.find("tokenizer.ggml.model")) return "no tokenizer (the GGUF file carries none)";
    const text::GgufTokenizerFiles t = text::gguf_tokenizer_files(f);
    nlohmann::json gen = {{"bos_token_id", t.bos ? nlohmann::json(*t.bos) : nlohmann::json(nullptr)}};
    gen["eos_token_id"] = t.eos.size() == 1 ? nlohmann::json(t.eos.front()) : nlohmann::json(t.eos);
    write_file_atomically(dir / "generation_config.json", gen.dump(2) + "\n");
    if (!t.sentencepiece_model.empty()) {
      write_file_atomically(dir / "tokenizer.model", t.sentencepiece_model);
      write_file_atomically(dir / "tokenizer_config.json",
                            nlohmann::json{{"add_bos_token", t.add_bos}, {"add_eos_token", t.add_eos}}.dump(2) + "\n");
      return "tokenizer.model, tokenizer_config.json and generation_config.json from the GGUF tokenizer metadata";
    }
    write_file_atomically(dir / "tokenizer.json", t.tokenizer_json.dump(2) + "\n");
    return "tokenizer.json and generation_config.json from the GGUF tokenizer metadata";
  }
  const fs::path from = fs::is_directory(source) ? source : source.parent_path();
  std::string copied;
  for (const char* name : kTokenizerFiles) {
    std::error_code ec;
    if (!fs::is_regular_file(from / name, ec)) continue;
    fs::copy_file(from / name, dir / name, fs::copy_options::overwrite_existing);
    copied += (copied.empty() ? "" : ", ") + std::string(name);
  }
  return copied.empty() ? "no tokenizer files" : copied;
}

}  // namespace

int run_convert(const std::vector<std::string>& args, CommandIO& io) {
  std::string model, out, dtype;
  std::size_t shard_bytes = 0;
  bool force = false;
  po::options_description desc("convert options");
  desc.add_options()
      ("model", po::value(&model)->required(), "the model to convert: a GGUF file, or a checkpoint directory or weight file")
      ("out", po::value(&out)->required(), "the Hugging Face checkpoint directory to write (created; see --force)")
      ("dtype", po::value(&dtype), "F32, F16 or BF16 (default: the stored precision; F32 for quantized GGUF tensors, "
                                   "which dequantize exactly only to float32)")
      ("max-shard-bytes", po::value(&shard_bytes)->default_value(0), "split the weights into shards of at most this many bytes (0: one file)")
      ("force", po::bool_switch(&force), "write into --out even when it already holds a checkpoint");
  if (!parse_options(args, desc, io, "specdec convert --model FILE.gguf --out DIR [--dtype F32|F16|BF16]")) return 0;

  const fs::path dir = out;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw Error("--out " + out + " exists and is not a directory");
  if (fs::exists(dir / "config.json", ec) && !force) throw Error("--out " + out + " already holds a checkpoint; pass --force to overwrite it");
  if (fs::equivalent(fs::path(model), dir, ec)) throw Error("--out must not be the --model directory");

  const LlamaModel m = load_llama_checkpoint(model);
  const Dtype stored = parse_dtype(dtype.empty() ? dtype_of(m.config.torch_dtype) : dtype, "--dtype");
  std::string tokenizer;
  auto write = [&](const fs::path& d) {
    save_llama_checkpoint(d, m.config, m.weights, stored, shard_bytes);
    tokenizer = write_tokenizer(model, d);
  };
  if (fs::is_directory(dir, ec)) {
    write(dir);
  } else {
    write_directory_atomically(dir, "converted checkpoint", write);
  }
  io.out << "wrote " << out << ": " << m.config.architecture << ", " << m.config.num_hidden_layers << " layers, weights as "
         << dtype_name(stored) << "; " << tokenizer << "\n";
  return 0;
}

}  // namespace specdec::cli
