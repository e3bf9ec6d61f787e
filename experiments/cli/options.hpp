#pragma once
// Option groups shared by the decoding subcommands, and the helpers that turn them into models,
// prompts and sampling parameters.
#include <boost/program_options.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "experiments/cli/cli.hpp"
#include "reference/decoding/generation.hpp"
#include "text/tokenizer.hpp"
#include "reference/model/transformer.hpp"
#include "reference/sampling/sampling_params.hpp"

namespace specdec::cli {

namespace po = boost::program_options;

struct DecodeArgs {
  std::string model;
  std::string prompt;
  std::string prompt_ids;
  std::string method = "sequential";
  std::string drafter;          // draft LM (draft) or EAGLE / EAGLE-3 / P-EAGLE head directory
  int k = 4;
  std::string tree = "chain";   // chain | dynamic | mc_sim_7b_63 | a JSON file of paths
  int depth = 7;                // dynamic tree
  int tree_top_k = 10;          // dynamic tree
  int total_tokens = 60;        // dynamic tree
  bool force_depth = false;     // P-EAGLE: allow K beyond the trained depth
  std::string sampling = "greedy";
  double temperature = 1.0;
  int top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
  int max_new_tokens = 32;
  bool ignore_eos = false;
  int threads = 0;
  std::string backend = "reference";  // forward implementation of the target and the draft LM
  bool json = false;
};

// --model, --prompt/--prompt-ids, --method, sampling, --max-new-tokens, --ignore-eos, --threads,
// --backend, --json.
void add_decode_options(po::options_description& desc, DecodeArgs& a);

// Parses `args` against `desc`; returns false (after printing usage) when --help was given.
// Unknown options and bad values throw with a message naming the option.
bool parse_options(const std::vector<std::string>& args, po::options_description& desc, CommandIO& io,
                   const std::string& usage_line, po::positional_options_description* positional = nullptr);

// A checkpoint loaded for decoding. `model` is always the reference Transformer: its config, and
// the weights EAGLE heads bind to (embeddings, LM head). Target forwards go to forward_model(),
// the backend chosen with --backend (the reference itself unless another one was loaded).
struct LoadedModel {
  std::string path;
  std::unique_ptr<Transformer> model;
  std::string backend = "reference";
  std::unique_ptr<LanguageModel> backend_model;  // null for the reference backend
  std::shared_ptr<const text::Tokenizer> tokenizer;  // null: prompts and outputs as token ids
  std::string fingerprint;
  std::string stored_dtype;

  const LanguageModel& forward_model() const { return backend_model ? *backend_model : *model; }
};
// Loads the checkpoint at `path` into the reference and, unless `backend` is "reference", into
// that backend too. Throws specdec::Error for an unknown or unavailable backend before reading.
LoadedModel load_model(const std::string& path, const std::string& backend = "reference");

// The prompt as token ids: --prompt-ids "1,2,3" (as given) or --prompt TEXT (encoded by the
// checkpoint's tokenizer with what it adds around a prompt, typically BOS).
std::vector<int32_t> prompt_tokens(const DecodeArgs& a, const LoadedModel& m);
SamplingParams sampling_params(const DecodeArgs& a);
GenerationOptions generation_options(const DecodeArgs& a);
// Applies --threads (0 = leave the OpenMP default).
void apply_threads(int threads);

// Text for a terminal: printable ASCII and valid UTF-8 kept, everything else as \xNN escapes.
std::string printable(const std::string& text);
// Text on one line, for showing tokens and text the same way everywhere (specdec explain's text
// and page): as printable(), with backslash, newline, tab and carriage return written as \\, \n,
// \t and \r.
std::string escaped(const std::string& text);

}  // namespace specdec::cli
