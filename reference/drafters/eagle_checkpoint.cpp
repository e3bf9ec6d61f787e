#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/io/llama_checkpoint.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <span>
#include <sstream>
#include <system_error>

#include "reference/core/error.hpp"
#include "reference/drafters/eagle_tensors.hpp"
#include "reference/drafters/medusa_checkpoint.hpp"
#include "reference/drafters/mtp_checkpoint.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/tensor_store.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;

constexpr const char* kWeightsFile = "model.safetensors";

std::string dtype_to_torch(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32: return "float32";
    case Dtype::F16: return "float16";
    case Dtype::BF16: return "bfloat16";
    default: throw Error("drafter heads are saved as F32, F16 or BF16, not " + dtype_name(dtype));
  }
}

}  // namespace

nlohmann::json read_drafter_config(const fs::path& path) {
  return read_json_file(path.string(), "drafter head config");
}

namespace {

// Writes config.json and model.safetensors into the existing directory `dir`.
void write_head_files(const fs::path& dir, const EagleHead& head, Dtype dtype) {
  head.require_weights("save_eagle_head");
  EagleHeadConfig c = head.config();
  c.layer.torch_dtype = dtype_to_torch(dtype);
  EagleWeights& w = const_cast<EagleWeights&>(head.weights());  // eagle_tensors only takes addresses
  SafetensorsWriter writer;
  writer.set_metadata("format", "pt");  // transformers refuses files without a known format
  for (const EagleTensor& t : eagle_tensors(c, w)) {
    const float* data = t.m ? t.m->data() : t.v->data();
    const std::size_t n = static_cast<std::size_t>(t.m ? t.m->size() : t.v->size());
    writer.add_floats(t.name, dtype, t.stored_shape, std::span<const float>(data, n));
  }
  if (!w.d2t.empty()) {
    writer.add_int64s("d2t", Dtype::I64, {static_cast<int64_t>(w.d2t.size())}, w.d2t);
    const std::vector<int64_t> t2d(w.t2d.begin(), w.t2d.end());
    writer.add_int64s("t2d", Dtype::BOOL, {static_cast<int64_t>(t2d.size())}, t2d);
  }
  writer.write(dir / kWeightsFile);
  const ModelConfig& target = head.target().config();
  const nlohmann::json j = eagle_config_to_json(c, target.num_hidden_layers, target.architecture);
  write_file_atomically(dir / "config.json", j.dump(2) + "\n");
}

}  // namespace

EagleHead load_eagle_head(const fs::path& path, const TargetTensors& target) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("drafter head checkpoint '" + path.string() + "' does not exist");
  if (is_medusa_checkpoint(path)) {
    throw Error("'" + path.string() + "' holds Medusa heads, not an EAGLE-family head or MTP module (decode with --method medusa)");
  }
  // SafeAILab released most EAGLE-1 heads as a pickled pytorch_model.bin, which is not read.
  if (fs::is_directory(path, ec) && !fs::exists(path / kWeightsFile, ec) &&
      !fs::exists(path / "model.safetensors.index.json", ec)) {
    for (const char* pickle : {"pytorch_model.bin", "pytorch_model.bin.index.json"}) {
      if (fs::exists(path / pickle, ec)) {
        throw Error("drafter head checkpoint '" + path.string() + "': its weights are in '" + (path / pickle).string() +
                    "' (PyTorch pickle), which specdec does not read; convert them to model.safetensors first, e.g. "
                    "safetensors.torch.save_file({k: v.contiguous() for k, v in torch.load(\"pytorch_model.bin\").items()}, "
                    "\"model.safetensors\")");
      }
    }
  }
  // A weight file (.safetensors or the shard index) takes its config.json from its directory.
  const fs::path dir = fs::is_directory(path, ec) ? path : path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const fs::path config_path = dir / "config.json";
  const nlohmann::json j = read_drafter_config(config_path);
  const TensorStore store(path);
  const std::string source = config_path.string();
  if (is_mtp_checkpoint(j, store.names())) return load_mtp_modules(path, target).front();

  EagleHeadConfig c = parse_eagle_config(j, store.names(), source);
  if (c.kind != EagleKind::eagle1 && c.aux_layers.empty()) {
    try {
      c.aux_layers = default_aux_layers(target.config().num_hidden_layers);
    } catch (const Error& e) {
      throw Error(source + ": " + e.what());
    }
  }
  validate_eagle_config(c, source);
  // Mismatches with the target are reported as such, before any tensor shape disagrees.
  check_eagle_config_against_target(c, target.config(), source);

  const std::string what = "a " + eagle_kind_name(c.kind) + " head in the " + c.layout + " layout";
  auto require = [&](const std::string& name) {
    if (!store.has(name)) {
      throw Error("drafter head checkpoint '" + path.string() + "': missing tensor '" + name + "' (expected for " + what + ")");
    }
  };
  EagleWeights w;
  w.layers.resize(static_cast<std::size_t>(c.num_layers));
  for (const EagleTensor& t : eagle_tensors(c, w)) {
    require(t.name);
    if (t.m) {
      *t.m = store.matrix(t.name, t.rows, t.cols);
    } else if (t.stored_shape.size() > 1) {
      *t.v = store.flat_vector(t.name, t.rows);  // mask_hidden: [n], [1, n] or [1, 1, n]
    } else {
      *t.v = store.vector(t.name, t.rows);
    }
  }
  if (c.draft_vocab != c.target_vocab) require("d2t");
  if (store.has("d2t")) w.d2t = store.int64s("d2t", c.draft_vocab);
  if (store.has("t2d")) {
    if (!store.has("d2t")) {
      throw Error("drafter head checkpoint '" + path.string() + "': tensor 't2d' is present without 'd2t'");
    }
    for (int64_t v : store.int64s("t2d", c.target_vocab)) {
      if (v != 0 && v != 1) {
        throw Error(store.file_of("t2d").string() + ": tensor 't2d' holds " + std::to_string(v) +
                    ", expected booleans (0 or 1)");
      }
      w.t2d.push_back(static_cast<uint8_t>(v));
    }
  }
  return EagleHead(std::move(c), std::move(w), target, "drafter head checkpoint '" + path.string() + "'");
}

void save_eagle_head(const fs::path& dir_arg, const EagleHead& head, Dtype dtype) {
  if (head.config().kind == EagleKind::mtp) {
    if (head.config().num_modules != 1) {
      throw Error("save_eagle_head: an MTP module of " + std::to_string(head.config().num_modules) +
                  " is saved with its checkpoint's other modules (save_mtp_modules)");
    }
    save_mtp_modules(dir_arg, {head}, dtype);
    return;
  }
  // "out/" names the directory "out".
  const fs::path dir = dir_arg.filename().empty() && dir_arg.has_parent_path() ? dir_arg.parent_path() : dir_arg;
  dtype_to_torch(dtype);  // rejects other dtypes before anything is written
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    write_directory_atomically(dir, "drafter head", [&](const fs::path& tmp) { write_head_files(tmp, head, dtype); });
    return;
  }
  if (!fs::is_directory(dir, ec)) {
    throw Error("cannot save drafter head to '" + dir.string() + "': it exists and is not a directory");
  }
  write_head_files(dir, head, dtype);
  // A shard index of an earlier save would describe other weights; model.safetensors is preferred
  // by every reader, but stale shards must not be mistaken for part of this head.
  static const std::regex shard_pattern(R"(model-\d{5}-of-\d{5}\.safetensors)");
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == "model.safetensors.index.json" || std::regex_match(name, shard_pattern)) fs::remove(e.path(), ec);
  }
}

std::string eagle_head_fingerprint(const EagleHead& head) {
  head.require_weights("eagle_head_fingerprint (take it before binding the head)");
  const EagleWeights& w = head.weights();
  Fnv1a64 h;
  h.update(w.fc);
  h.update(w.fc_bias);
  h.update(w.hidden_norm);
  if (w.embed_norm.size()) h.update(w.embed_norm);  // MTP only: other heads' fingerprints stay as they were
  for (const LayerWeights& l : w.layers) hash_layer_weights(h, l);
  h.update(w.norm);
  h.update(w.lm_head);
  h.update(w.embed_tokens);
  for (int64_t v : w.d2t) h.update_u64(static_cast<uint64_t>(v));
  h.update(w.t2d.data(), w.t2d.size());
  h.update(w.mask_hidden);
  return h.str();
}

}  // namespace specdec
