#include "experiments/cli/options.hpp"

#include <iostream>
#include <sstream>

#include "experiments/runtime/backend.hpp"
#include "reference/core/error.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/ops.hpp"
#include "text/load_tokenizer.hpp"

namespace specdec::cli {

void add_decode_options(po::options_description& desc, DecodeArgs& a) {
  desc.add_options()
      ("model", po::value(&a.model)->required(), "checkpoint directory (config.json + safetensors), or a .safetensors file beside a config.json")
      ("prompt", po::value(&a.prompt), "prompt text, encoded by the checkpoint's tokenizer (tokenizer.json, tokenizer.model or vocab.json)")
      ("prompt-ids", po::value(&a.prompt_ids), "prompt as comma-separated token ids")
      ("method", po::value(&a.method)->default_value(a.method), "decoding method: sequential | draft | eagle | eagle3 | peagle")
      ("drafter", po::value(&a.drafter), "drafter checkpoint directory: a draft LM sharing the target's vocabulary (draft), or an EAGLE-1 (eagle), EAGLE-3 (eagle3) or P-EAGLE (peagle) head")
      ("k", po::value(&a.k)->default_value(a.k), "draft length K: tokens drafted per step (chains; P-EAGLE's parallel depth)")
      ("tree", po::value(&a.tree)->default_value(a.tree), "draft shape for eagle/eagle3/peagle: chain | dynamic (EAGLE-2; eagle/eagle3) | mc_sim_7b_63 | paths of child ranks as JSON, inline or in a file, e.g. '[[0],[1],[0,0]]'")
      ("depth", po::value(&a.depth)->default_value(a.depth), "dynamic tree: expansion depth")
      ("tree-top-k", po::value(&a.tree_top_k)->default_value(a.tree_top_k), "dynamic tree: children kept per node and frontier width")
      ("total-tokens", po::value(&a.total_tokens)->default_value(a.total_tokens), "dynamic tree: tokens verified per step (draft nodes + 1)")
      ("force-depth", po::bool_switch(&a.force_depth), "P-EAGLE: allow K beyond the depth the head was trained for")
      ("sampling", po::value(&a.sampling)->default_value(a.sampling), "greedy | sample | coupled")
      ("temperature", po::value(&a.temperature)->default_value(a.temperature), "sampling temperature (> 0)")
      ("top-k", po::value(&a.top_k)->default_value(a.top_k), "keep the k most likely tokens (0 = off)")
      ("top-p", po::value(&a.top_p)->default_value(a.top_p), "nucleus sampling mass in (0, 1] (1 = off)")
      ("seed", po::value(&a.seed)->default_value(a.seed), "random seed (Philox key)")
      ("max-new-tokens", po::value(&a.max_new_tokens)->default_value(a.max_new_tokens), "tokens to generate at most")
      ("ignore-eos", po::bool_switch(&a.ignore_eos), "do not stop at the end-of-sequence token")
      ("threads", po::value(&a.threads)->default_value(a.threads), "worker threads (0 = all cores); results do not depend on it")
      ("backend", po::value(&a.backend)->default_value(a.backend), "forward implementation of the target, a draft LM and an EAGLE-family head: reference | cpu (optimized, when built) | cuda (the target and a draft LM on a GPU, heads in the reference's code; SPECDEC_CUDA_DEVICE=emulator runs it on the CPU grid emulator) | plugin:PATH.so (a plug-in backend, docs/validation.md)")
      ("json", po::bool_switch(&a.json), "print one JSON object instead of text");
}

bool parse_options(const std::vector<std::string>& args, po::options_description& desc, CommandIO& io,
                   const std::string& usage_line, po::positional_options_description* positional) {
  desc.add_options()("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  auto parser = po::command_line_parser(args).options(desc);
  if (positional) parser.positional(*positional);
  po::store(parser.run(), vm);
  // Bound variables are only written by notify(), which also enforces required options: look at
  // --help in the map first so that it works without them.
  if (vm.count("help") && vm["help"].as<bool>()) {
    io.out << "usage: " << usage_line << "\n\n" << desc << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}

LoadedModel load_model(const std::string& path, const std::string& backend) {
  check_backend(backend, "--backend");
  LoadedModel m;
  m.path = path;
  m.backend = backend;
  LlamaModel loaded = load_llama_checkpoint(path);
  m.stored_dtype = loaded.config.torch_dtype;
  m.fingerprint = weights_fingerprint(loaded.weights);
  m.model = std::make_unique<Transformer>(std::move(loaded.config), std::move(loaded.weights));
  if (backend != "reference") m.backend_model = load_backend(backend, path);
  m.tokenizer = text::load_tokenizer(path, m.model->config().bos_token_id);
  if (m.tokenizer && m.tokenizer->size() > m.model->config().vocab_size) {
    throw Error(m.tokenizer->description() + " has token ids up to " + std::to_string(m.tokenizer->size() - 1) +
                ", but the model's config.json has vocab_size " + std::to_string(m.model->config().vocab_size) +
                ": the tokenizer and the model do not belong together");
  }
  return m;
}

std::vector<int32_t> prompt_tokens(const DecodeArgs& a, const LoadedModel& m) {
  if (!a.prompt.empty() && !a.prompt_ids.empty()) throw Error("give either --prompt or --prompt-ids, not both");
  std::vector<int32_t> ids;
  if (!a.prompt_ids.empty()) {
    std::stringstream ss(a.prompt_ids);
    std::string item;
    while (std::getline(ss, item, ',')) {
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(item, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != item.size() || v < 0 || v >= m.model->config().vocab_size) {
        throw Error("--prompt-ids: '" + item + "' is not a token id in [0, " + std::to_string(m.model->config().vocab_size) + ")");
      }
      ids.push_back(static_cast<int32_t>(v));
    }
  } else if (!a.prompt.empty()) {
    if (!m.tokenizer) {
      throw Error(m.path + " has no tokenizer (tokenizer.json, tokenizer.model or vocab.json), so text prompts cannot be encoded; "
                  "give --prompt-ids instead");
    }
    ids = m.tokenizer->encode(a.prompt, true);
  }
  if (ids.empty()) throw Error("no prompt: give --prompt TEXT or --prompt-ids 1,2,3");
  return ids;
}

SamplingParams sampling_params(const DecodeArgs& a) {
  SamplingParams p;
  p.mode = parse_sampling_mode(a.sampling);
  p.temperature = a.temperature;
  p.top_k = a.top_k;
  p.top_p = a.top_p;
  p.seed = a.seed;
  p.validate();
  return p;
}

GenerationOptions generation_options(const DecodeArgs& a) {
  if (a.max_new_tokens < 0) throw Error("--max-new-tokens must be >= 0");
  GenerationOptions o;
  o.max_new_tokens = a.max_new_tokens;
  o.stop_at_eos = !a.ignore_eos;
  return o;
}

void apply_threads(int threads) {
  if (threads < 0) throw Error("--threads must be >= 0");
  if (threads > 0) ops::set_num_threads(threads);
}

std::string printable(const std::string& text) {
  std::string out;
  static const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool valid = len > 0 && i + len <= text.size();
    for (int k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (valid && len == 1 && (c < 0x20 || c == 0x7f) && c != '\n' && c != '\t') valid = false;
    if (valid) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  return out;
}

std::string escaped(const std::string& text) {
  std::string out, run;
  for (char c : text) {
    const char* e = c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : nullptr;
    if (!e) {
      run += c;
      continue;
    }
    out += printable(run);  // UTF-8 sequences hold no ASCII bytes, so splitting here keeps them whole
    run.clear();
    out += e;
  }
  return out + printable(run);
}

}  // namespace specdec::cli
