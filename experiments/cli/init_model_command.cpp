// specdec init-model: write a deterministic random-weight checkpoint in the Hugging Face format.
#include <filesystem>

#include "experiments/cli/options.hpp"
#include "reference/core/error.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/model/presets.hpp"
#include "reference/model/random_weights.hpp"

namespace specdec::cli {

int run_init_model(const std::vector<std::string>& args, CommandIO& io) {
  std::string preset = "tiny", out, dtype_name = "F32";
  uint64_t seed = 0;
  double shard_mb = 0;
  bool force = false;
  po::options_description desc("init-model options");
  desc.add_options()
      ("preset", po::value(&preset)->default_value(preset), "model shape: tiny | llama-100m | llama-0.5b | llama-1b")
      ("out", po::value(&out)->required(), "output directory (created)")
      ("seed", po::value(&seed)->default_value(seed), "weight seed; the same seed gives the same bytes on every machine")
      ("dtype", po::value(&dtype_name)->default_value(dtype_name), "stored dtype: F32 | F16 | BF16")
      ("shard-mb", po::value(&shard_mb)->default_value(shard_mb), "split into shards of at most this many MB (0 = one file)")
      ("force", po::bool_switch(&force), "overwrite an existing checkpoint in --out");
  if (!parse_options(args, desc, io, "specdec init-model --out DIR [--preset NAME] [options]")) return 0;

  const ModelPreset& p = find_model_preset(preset);
  const Dtype dtype = parse_dtype(dtype_name, "--dtype");
  if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16) throw Error("--dtype must be F32, F16 or BF16");
  if (shard_mb < 0) throw Error("--shard-mb must be >= 0");
  const std::filesystem::path dir(out);
  if (std::filesystem::exists(dir / "config.json") && !force) {
    throw Error(out + " already holds a checkpoint; pass --force to overwrite it");
  }
  std::filesystem::create_directories(dir);
  ModelConfig config = p.config;
  const LlamaWeights weights = random_llama_weights(config, seed);
  save_llama_checkpoint(dir, config, weights, dtype, static_cast<std::size_t>(shard_mb * 1024 * 1024));
  if (config.vocab_size == 259) Vocabulary::bytes(3, {{"<bos>", 0}, {"<eos>", 1}, {"<pad>", 2}}).save(dir / "vocab.json");
  io.out << "wrote " << out << ": preset " << p.name << " (" << p.description << "), " << parameter_count(config) / 1e6
         << "M parameters, " << dtype_name << ", seed " << seed << ", fingerprint "
         << weights_fingerprint(load_llama_checkpoint(dir).weights) << " (of the stored weights)\n";
  return 0;
}

}  // namespace specdec::cli
