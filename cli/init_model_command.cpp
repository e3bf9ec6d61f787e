// specdec init-model: write a deterministic random-weight checkpoint in the Hugging Face format.
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>

#include "cli/options.hpp"
#include "runtime/random_drafters.hpp"
#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/llama_checkpoint.hpp"
#include "reference/io/vocabulary.hpp"
#include "reference/model/presets.hpp"
#include "reference/model/random_weights.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/eagle_config.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "reference/drafters/medusa_checkpoint.hpp"
#include "reference/drafters/medusa_heads.hpp"

namespace specdec::cli {

namespace {

// A new directory appears complete or not at all (write_directory_atomically; its parent must
// exist); an existing one (--force) is written into file by file, each file atomically.
void write_into_directory(const std::filesystem::path& dir_arg, const std::string& what,
                          const std::function<void(const std::filesystem::path&)>& write) {
  // "out/" names the directory "out".
  const std::filesystem::path dir = dir_arg.filename().empty() && dir_arg.has_parent_path() ? dir_arg.parent_path() : dir_arg;
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) {
    write(dir);
  } else {
    write_directory_atomically(dir, what, write);
  }
}

// A deterministic random EAGLE-family head shaped for `target_dir`'s model, in its published
// layout (SafeAILab for EAGLE-1/EAGLE-3, AWS for P-EAGLE).
int init_head(const std::string& kind, const std::string& target_dir, int layers, const std::string& aux,
              const std::string& out, uint64_t seed, const std::string& dtype_name, bool force, CommandIO& io) {
  if (target_dir.empty()) throw Error("--head needs --target DIR (the model the head drafts for)");
  const Dtype dtype = parse_dtype(dtype_name, "--dtype");
  const std::filesystem::path dir(out);
  if (std::filesystem::exists(dir / "config.json") && !force) throw Error(out + " already holds a checkpoint; pass --force to overwrite it");
  LlamaModel t = load_llama_checkpoint(target_dir);
  const Transformer target(t.config, std::move(t.weights));
  const ModelConfig& tc = target.config();
  if (layers < 0) throw Error("--head-layers must be >= 0");
  if (kind == "medusa") {
    // FasterDecoding's layout: 4 heads of `layers` (default 1) residual blocks.
    const MedusaHeads m = random_medusa_heads(medusa_config_for(tc, 4, layers > 0 ? layers : 1), tc, seed, 0.02f);
    write_into_directory(dir, "Medusa heads", [&](const std::filesystem::path& d) { save_medusa_heads(m, d, MedusaLayout::medusa, dtype); });
    io.out << "wrote " << out << ": random Medusa heads (4 heads, " << m.config().num_layers << " block" << (m.config().num_layers == 1 ? "" : "s")
           << " each) for " << target_dir << ", seed " << seed << "\n";
    return 0;
  }
  // The head kinds by their names (eagle_kind_name): eagle1, eagle3, peagle, mtp.
  std::optional<EagleKind> head_kind;
  for (EagleKind k : {EagleKind::eagle1, EagleKind::eagle3, EagleKind::peagle, EagleKind::mtp})
    if (kind == eagle_kind_name(k)) head_kind = k;
  if (!head_kind) throw Error("--head must be eagle1, eagle3, peagle, mtp or medusa, not '" + kind + "'");
  std::vector<int> aux_layers;
  if (*head_kind != EagleKind::eagle1 && *head_kind != EagleKind::mtp && !aux.empty()) {
    std::stringstream ss(aux);
    std::string item;
    while (std::getline(ss, item, ',')) {
      try {
        aux_layers.push_back(std::stoi(item));
      } catch (const std::exception&) {
        throw Error("--aux-layers: '" + item + "' is not a layer index");
      }
    }
  }
  const EagleHeadConfig c = random_head_config(*head_kind, tc, layers, aux_layers);
  const EagleHead h = random_eagle_head(c, target, seed, 0.02f);
  write_into_directory(dir, "drafter head", [&](const std::filesystem::path& d) { save_eagle_head(d, h, dtype); });
  io.out << "wrote " << out << ": random " << eagle_kind_name(c.kind) << " head (" << c.num_layers << " layer"
         << (c.num_layers == 1 ? "" : "s") << ") for " << target_dir << ", seed " << seed << "\n";
  return 0;
}

}  // namespace

int run_init_model(const std::vector<std::string>& args, CommandIO& io) {
  std::string preset = "tiny", out, dtype_name = "F32";
  uint64_t seed = 0;
  double shard_mb = 0;
  bool force = false;
  std::string head, target_dir, aux;
  int head_layers = 0;
  po::options_description desc("init-model options");
  desc.add_options()
      ("preset", po::value(&preset)->default_value(preset), "model shape: tiny | llama-22m | llama-4m-draft | llama-100m | llama-0.5b | llama-1b | llama-3.1-8b")
      ("out", po::value(&out)->required(), "output directory (created)")
      ("seed", po::value(&seed)->default_value(seed), "weight seed; the same seed gives the same bytes on every machine")
      ("dtype", po::value(&dtype_name)->default_value(dtype_name), "stored dtype: F32 | F16 | BF16")
      ("shard-mb", po::value(&shard_mb)->default_value(shard_mb), "split into shards of at most this many MB (0 = one file)")
      ("force", po::bool_switch(&force), "overwrite an existing checkpoint in --out")
      ("head", po::value(&head), "write a random drafter instead: eagle1 | eagle3 | peagle | mtp (one DeepSeek-V3-layout module) | medusa (4 heads) (needs --target)")
      ("target", po::value(&target_dir), "--head: the target checkpoint the head drafts for")
      ("head-layers", po::value(&head_layers)->default_value(0), "--head: decoder layers (0 = 1 for EAGLE and MTP, 2 for P-EAGLE); Medusa: residual blocks per head (0 = 1)")
      ("aux-layers", po::value(&aux), "--head eagle3/peagle: target hidden-state indices to fuse, e.g. 1,2,3 (default 2, L/2, L-3)");
  if (!parse_options(args, desc, io, "specdec init-model --out DIR [--preset NAME | --head KIND --target DIR] [options]")) return 0;
  if (!head.empty()) return init_head(head, target_dir, head_layers, aux, out, seed, dtype_name, force, io);

  const ModelPreset& p = find_model_preset(preset);
  const Dtype dtype = parse_dtype(dtype_name, "--dtype");
  if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16) throw Error("--dtype must be F32, F16 or BF16");
  if (shard_mb < 0) throw Error("--shard-mb must be >= 0");
  const std::filesystem::path dir(out);
  if (std::filesystem::exists(dir / "config.json") && !force) {
    throw Error(out + " already holds a checkpoint; pass --force to overwrite it");
  }
  ModelConfig config = p.config;
  const LlamaWeights weights = random_llama_weights(config, seed);
  write_into_directory(dir, "checkpoint", [&](const std::filesystem::path& d) {
    save_llama_checkpoint(d, config, weights, dtype, static_cast<std::size_t>(shard_mb * 1024 * 1024));
    if (config.vocab_size == 259) Vocabulary::bytes(3, {{"<bos>", 0}, {"<eos>", 1}, {"<pad>", 2}}).save(d / "vocab.json");
  });
  io.out << "wrote " << out << ": preset " << p.name << " (" << p.description << "), " << parameter_count(config) / 1e6
         << "M parameters, " << dtype_name << ", seed " << seed << ", fingerprint "
         << weights_fingerprint(load_llama_checkpoint(dir).weights) << " (of the stored weights)\n";
  return 0;
}

}  // namespace specdec::cli
