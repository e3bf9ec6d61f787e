#include "reference/drafters/medusa_checkpoint.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <sstream>
#include <system_error>

#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/fingerprint.hpp"
#include "reference/io/json_int.hpp"
#include "reference/io/tensor_store.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kMedusaWeights = "medusa_lm_head.safetensors";  // FasterDecoding's name, as safetensors
constexpr const char* kMedusaPickle = "medusa_lm_head.pt";
constexpr const char* kModelWeights = "model.safetensors";
constexpr const char* kModelIndex = "model.safetensors.index.json";

// vLLM MedusaConfig's defaults for what its config.json leaves out; FasterDecoding's MedusaConfig
// defaults to 4 heads of 1 layer and reads hidden and vocabulary sizes from the base model.
constexpr int kVllmHeads = 5, kVllmLayers = 1, kVllmHidden = 4096, kVllmVocab = 32001;
constexpr int kMedusaHeads = 4, kMedusaLayers = 1;

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

fs::path dir_of(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return path;
  return path.parent_path().empty() ? fs::path(".") : path.parent_path();
}

std::optional<json> read_config(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return std::nullopt;
  return read_json_file(file.string(), "Medusa head config");
}

bool is_vllm_config(const json& j) { return j.is_object() && j.contains("model_type") && j["model_type"] == "medusa"; }

// config.json parsed; whether it gave the hidden and vocabulary sizes (else they are defaults).
struct ParsedConfig {
  MedusaConfig c;
  bool hidden_given = false;
  bool vocab_given = false;
};

ParsedConfig parse_config(const json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": expected a JSON object, got " + std::string(j.type_name()));
  auto given = [&](const char* key) { return j.contains(key) && !j[key].is_null(); };
  auto integer = [&](const char* key) { return json_int32(j[key], source + ": " + key); };
  // A count under its vLLM name or its FasterDecoding name (vLLM renames the latter).
  auto count = [&](const char* name, const char* other, int fallback) {
    if (given(name) && given(other) && integer(name) != integer(other)) {
      throw Error(source + ": " + name + " (" + j[name].dump() + ") and " + other + " (" + j[other].dump() +
                  ") disagree; give one");
    }
    return given(name) ? integer(name) : given(other) ? integer(other) : fallback;
  };
  auto boolean = [&](const char* key) {
    if (!given(key)) return false;
    if (!j[key].is_boolean()) throw Error(source + ": " + key + " must be true or false, got " + j[key].dump());
    return j[key].get<bool>();
  };
  ParsedConfig p;
  MedusaConfig& c = p.c;
  c.layout = is_vllm_config(j) ? MedusaLayout::vllm : MedusaLayout::medusa;
  const bool vllm = c.layout == MedusaLayout::vllm;
  p.hidden_given = given("hidden_size");
  p.vocab_given = given("vocab_size");
  c.hidden = p.hidden_given ? integer("hidden_size") : vllm ? kVllmHidden : 0;
  c.vocab = p.vocab_given ? integer("vocab_size") : vllm ? kVllmVocab : 0;
  if (given("base_model_name_or_path")) {
    if (!j["base_model_name_or_path"].is_string()) {
      throw Error(source + ": base_model_name_or_path must be a string, got " + j["base_model_name_or_path"].dump());
    }
    c.base_model = j["base_model_name_or_path"].get<std::string>();
  }
  if (!vllm) {
    c.num_heads = given("medusa_num_heads") ? integer("medusa_num_heads") : kMedusaHeads;
    c.num_layers = given("medusa_num_layers") ? integer("medusa_num_layers") : kMedusaLayers;
    c.fc_bias = true;  // nn.Linear's default
    return p;
  }
  c.num_heads = count("num_heads", "medusa_num_heads", kVllmHeads);
  c.num_layers = count("num_hidden_layers", "medusa_num_layers", kVllmLayers);
  c.fc_bias = boolean("medusa_fc_bias");
  c.shared_lm_head = boolean("original_lm_head");
  if (given("truncated_vocab_size")) {
    const int t = integer("truncated_vocab_size");
    if (t < c.vocab) {
      throw Error(source + ": truncated_vocab_size " + std::to_string(t) + " is below vocab_size " + std::to_string(c.vocab) +
                  ": heads over a truncated vocabulary (vLLM's token_map) are not implemented; give heads over the whole "
                  "vocabulary (truncated_vocab_size = vocab_size)");
    }
    if (t > c.vocab) {
      throw Error(source + ": truncated_vocab_size " + std::to_string(t) + " exceeds vocab_size " + std::to_string(c.vocab));
    }
  }
  if (given("logit_scale")) {
    const json& s = j["logit_scale"];
    if (!s.is_number()) throw Error(source + ": logit_scale must be a number, got " + s.dump());
    const double v = s.get<double>();
    // vLLM multiplies the logits by it; in fp32 that is one rounded multiply per logit.
    if (!std::isfinite(v) || !(v > 0.0) || !std::isfinite(static_cast<float>(v))) {
      throw Error(source + ": logit_scale must be a finite number > 0, got " + s.dump());
    }
    c.logit_scale = static_cast<float>(v);
  }
  return p;
}

// The refusal of a pickled checkpoint, with the command that converts it.
[[noreturn]] void refuse_pickle(const fs::path& pickle, const std::string& target_name) {
  throw Error("Medusa checkpoint '" + dir_of(pickle).string() + "': its weights are in '" + pickle.string() +
              "' (a PyTorch pickle), which specdec does not read; convert them to safetensors first, e.g. "
              "safetensors.torch.save_file({k: v.clone().contiguous() for k, v in torch.load(\"" +
              pickle.filename().string() + "\", map_location=\"cpu\").items()}, \"" + target_name + "\")");
}

// Where the tensors are: medusa_lm_head.safetensors, else model.safetensors or its shards; a
// weight file given directly is read as it is.
fs::path weights_of(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("Medusa checkpoint '" + path.string() + "' does not exist");
  if (!fs::is_directory(path, ec)) {
    const std::string ext = path.extension().string();
    if (ext == ".pt" || ext == ".bin" || ext == ".pth") refuse_pickle(path, kMedusaWeights);
    return path;
  }
  if (fs::exists(path / kMedusaWeights, ec)) return path / kMedusaWeights;
  if (fs::exists(path / kModelWeights, ec) || fs::exists(path / kModelIndex, ec)) return path;
  if (fs::exists(path / kMedusaPickle, ec)) refuse_pickle(path / kMedusaPickle, kMedusaWeights);
  if (fs::exists(path / "pytorch_model.bin", ec)) refuse_pickle(path / "pytorch_model.bin", kModelWeights);
  throw Error("Medusa checkpoint '" + path.string() + "' has no weights: expected " + kMedusaWeights + " or " + kModelWeights);
}

// Stored tensor names keyed by the name medusa_tensors gives them: the module prefix each
// engine drops is dropped, and vLLM's shared head may be stored as lm_head.weight.
std::map<std::string, std::string> canonical_names(const TensorStore& store, const MedusaConfig& c) {
  std::map<std::string, std::string> out;
  for (const std::string& stored : store.names()) {
    std::string name = stored;
    const std::string prefix = c.layout == MedusaLayout::medusa ? "medusa_head." : "medusa_heads.";
    if (starts_with(name, prefix)) name = name.substr(prefix.size());
    if (c.layout == MedusaLayout::vllm && c.shared_lm_head && name == "lm_head.weight") name = "lm_heads.0.weight";
    const auto [it, fresh] = out.emplace(name, stored);
    if (!fresh) {
      throw Error(store.file_of(stored).string() + ": tensors '" + it->second + "' and '" + stored + "' both hold '" + name +
                  "' (with the prefix dropped or as the shared head); keep one");
    }
  }
  return out;
}

std::string describe(const MedusaConfig& c) {
  return std::to_string(c.num_heads) + (c.num_heads == 1 ? " head of " : " heads of ") + std::to_string(c.num_layers) +
         (c.num_layers == 1 ? " block in the " : " blocks in the ") +
         medusa_layout_name(c.layout) + " layout" + (c.fc_bias ? ", with block biases" : ", without block biases") +
         (c.shared_lm_head ? ", one shared projection" : "");
}

// A hint when the file's names belong to the other layout than config.json's.
std::string layout_hint(const std::map<std::string, std::string>& names, const MedusaConfig& c) {
  for (const auto& [name, stored] : names) {
    const bool vllm_name = starts_with(name, "blocks.") || starts_with(name, "lm_heads.");
    const bool medusa_name = !name.empty() && std::isdigit(static_cast<unsigned char>(name[0]));
    if (c.layout == MedusaLayout::medusa && vllm_name) {
      return "; the file's names are vLLM's (e.g. '" + stored + "'), but config.json has no model_type \"medusa\"";
    }
    if (c.layout == MedusaLayout::vllm && medusa_name) {
      return "; the file's names are FasterDecoding/Medusa's (e.g. '" + stored +
             "'), but config.json has model_type \"medusa\" (vLLM's layout)";
    }
  }
  return "";
}

std::string unexpected_hint(const std::string& name, const MedusaConfig& c) {
  if (name == "token_map") return " (a truncated vocabulary's token map, but truncated_vocab_size is not below vocab_size)";
  if (c.layout == MedusaLayout::vllm && !c.fc_bias && name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0) {
    return " (block biases, but medusa_fc_bias is false)";
  }
  if (starts_with(name, "model.") || name == "lm_head.weight") {
    return " (a base model's tensor: a full model with Medusa heads; keep only the medusa_head.* tensors)";
  }
  return "";
}

// Everything load and inspect share: config.json and the tensor store.
struct Opened {
  ParsedConfig parsed;
  std::string config_source;
  fs::path weights;
  std::optional<TensorStore> store;
};

Opened open_checkpoint(const fs::path& path) {
  Opened o;
  o.weights = weights_of(path);
  const fs::path config_path = dir_of(path) / "config.json";
  o.config_source = config_path.string();
  const std::optional<json> j = read_config(config_path);
  if (!j) throw Error("Medusa checkpoint '" + path.string() + "': cannot read its config.json ('" + o.config_source + "')");
  o.parsed = parse_config(*j, o.config_source);
  o.store.emplace(o.weights);
  return o;
}

void write_files(const fs::path& dir, const MedusaHeads& heads, const MedusaConfig& c, Dtype dtype) {
  heads.require_weights("save_medusa_heads");
  MedusaWeights& w = const_cast<MedusaWeights&>(heads.weights());  // medusa_tensors only takes addresses
  SafetensorsWriter writer;
  writer.set_metadata("format", "pt");  // safetensors.torch and transformers refuse files without it
  for (const MedusaTensor& t : medusa_tensors(c, w)) {
    const float* data = t.m ? t.m->data() : t.v->data();
    const std::size_t count = static_cast<std::size_t>(t.m ? t.m->size() : t.v->size());
    const std::vector<int64_t> shape = t.m ? std::vector<int64_t>{t.rows, t.cols} : std::vector<int64_t>{t.rows};
    writer.add_floats(t.name, dtype, shape, std::span<const float>(data, count));
  }
  const bool vllm = c.layout == MedusaLayout::vllm;
  writer.write(dir / (vllm ? kModelWeights : kMedusaWeights));
  json j = medusa_config_to_json(c);
  j["torch_dtype"] = dtype == Dtype::F32 ? "float32" : dtype == Dtype::F16 ? "float16" : "bfloat16";
  write_file_atomically(dir / "config.json", j.dump(2) + "\n");
  // A weight file of the other layout (or shards of an earlier save) would be read instead of,
  // or mistaken for part of, these heads.
  std::error_code ec;
  if (vllm) {
    fs::remove(dir / kMedusaWeights, ec);
  } else {
    fs::remove(dir / kModelWeights, ec);
  }
  fs::remove(dir / kModelIndex, ec);
}

}  // namespace

bool is_medusa_checkpoint(const fs::path& path) {
  std::error_code ec;
  const fs::path dir = dir_of(path);
  if (fs::exists(dir / kMedusaWeights, ec) || fs::exists(dir / kMedusaPickle, ec)) return true;
  try {
    const std::optional<json> j = read_config(dir / "config.json");
    return j && j->is_object() && (is_vllm_config(*j) || j->contains("medusa_num_heads"));
  } catch (const Error&) {
    return false;
  }
}

MedusaCheckpointInfo read_medusa_checkpoint(const fs::path& path) {
  Opened o = open_checkpoint(path);
  MedusaCheckpointInfo info;
  info.config = o.parsed.c;
  info.weights = o.weights;
  info.tensors = o.store->names();
  // FasterDecoding's config need not give the sizes: the first projection's shape does.
  if (!o.parsed.hidden_given || !o.parsed.vocab_given) {
    MedusaConfig& c = info.config;
    const std::map<std::string, std::string> names = canonical_names(*o.store, c);
    MedusaConfig probe = c;  // sizes that tell the projections ([2, 1]) from the blocks
    probe.hidden = 1;
    probe.vocab = 2;
    MedusaWeights w = sized_medusa_weights(probe);
    for (const MedusaTensor& t : medusa_tensors(probe, w)) {
      if (!t.m || t.rows != probe.vocab) continue;  // the first projection
      const auto it = names.find(t.name);
      if (it != names.end() && o.store->info(it->second).shape.size() == 2) {
        const std::vector<int64_t>& shape = o.store->info(it->second).shape;
        if (!o.parsed.vocab_given) c.vocab = static_cast<int>(std::min<int64_t>(shape[0], INT32_MAX));
        if (!o.parsed.hidden_given) c.hidden = static_cast<int>(std::min<int64_t>(shape[1], INT32_MAX));
      }
      break;
    }
  }
  return info;
}

MedusaHeads load_medusa_heads(const fs::path& path, const ModelConfig& target) {
  Opened o = open_checkpoint(path);
  MedusaConfig c = o.parsed.c;
  const std::string& source = o.config_source;
  // FasterDecoding sizes its heads from the base model; shapes are checked against it below.
  if (c.layout == MedusaLayout::medusa) {
    if (!o.parsed.hidden_given) c.hidden = target.hidden_size;
    if (!o.parsed.vocab_given) c.vocab = target.vocab_size;
  }
  validate_medusa_config(c, source);
  if (c.layout == MedusaLayout::vllm && (!o.parsed.hidden_given || !o.parsed.vocab_given)) {
    const bool hidden_bad = !o.parsed.hidden_given && c.hidden != target.hidden_size;
    if (hidden_bad || (!o.parsed.vocab_given && c.vocab != target.vocab_size)) {
      const char* field = hidden_bad ? "hidden_size" : "vocab_size";
      throw Error(source + ": " + field + " is absent, so vLLM takes its default " +
                  std::to_string(hidden_bad ? kVllmHidden : kVllmVocab) + ", which differs from the target's " +
                  std::to_string(hidden_bad ? target.hidden_size : target.vocab_size) + "; give " + field + " in config.json");
    }
  }
  // Mismatches with the target are reported as such, before any tensor shape disagrees.
  check_medusa_config_against_target(c, target, source);

  const TensorStore& store = *o.store;
  const std::map<std::string, std::string> names = canonical_names(store, c);
  MedusaWeights w = sized_medusa_weights(c);
  std::map<std::string, bool> used;
  for (const MedusaTensor& t : medusa_tensors(c, w)) {
    const auto it = names.find(t.name);
    if (it == names.end()) {
      throw Error("Medusa checkpoint '" + o.weights.string() + "': missing tensor '" + t.name + "' (expected for " +
                  describe(c) + ")" + layout_hint(names, c));
    }
    used[it->first] = true;
    if (t.m) {
      *t.m = store.matrix(it->second, t.rows, t.cols);
    } else {
      *t.v = store.vector(it->second, t.rows);
    }
  }
  for (const auto& [name, stored] : names) {
    if (used.count(name)) continue;
    throw Error(store.file_of(stored).string() + ": unexpected tensor '" + stored + "': the config (" + describe(c) +
                ") has no place for it" + unexpected_hint(name, c));
  }
  return MedusaHeads(std::move(c), std::move(w), target, "Medusa checkpoint '" + path.string() + "'");
}

json medusa_config_to_json(const MedusaConfig& c) {
  json j;
  if (c.layout == MedusaLayout::medusa) {
    j["medusa_num_heads"] = c.num_heads;
    j["medusa_num_layers"] = c.num_layers;
    if (!c.base_model.empty()) j["base_model_name_or_path"] = c.base_model;
    j["hidden_size"] = c.hidden;
    j["vocab_size"] = c.vocab;
    return j;
  }
  j["model_type"] = "medusa";
  j["architectures"] = json::array({"MedusaModel"});
  j["num_heads"] = c.num_heads;
  j["num_hidden_layers"] = c.num_layers;
  j["hidden_size"] = c.hidden;
  j["vocab_size"] = c.vocab;
  j["truncated_vocab_size"] = c.vocab;
  j["medusa_fc_bias"] = c.fc_bias;
  j["original_lm_head"] = c.shared_lm_head;
  j["logit_scale"] = static_cast<double>(c.logit_scale);  // exact: every float is a double
  if (!c.base_model.empty()) j["base_model_name_or_path"] = c.base_model;
  return j;
}

void save_medusa_heads(const MedusaHeads& heads, const fs::path& dir_arg, MedusaLayout layout, Dtype dtype) {
  // "out/" names the directory "out".
  const fs::path dir = dir_arg.filename().empty() && dir_arg.has_parent_path() ? dir_arg.parent_path() : dir_arg;
  if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16) {
    throw Error("Medusa heads are saved as F32, F16 or BF16, not " + dtype_name(dtype));
  }
  MedusaConfig c = heads.config();
  c.layout = layout;
  validate_medusa_config(c, "cannot save Medusa heads to '" + dir.string() + "' in the " + medusa_layout_name(layout) + " layout");
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    write_directory_atomically(dir, "Medusa heads", [&](const fs::path& tmp) { write_files(tmp, heads, c, dtype); });
    return;
  }
  if (!fs::is_directory(dir, ec)) throw Error("cannot save Medusa heads to '" + dir.string() + "': it exists and is not a directory");
  write_files(dir, heads, c, dtype);
}

std::string medusa_heads_fingerprint(const MedusaHeads& heads) {
  heads.require_weights("medusa_heads_fingerprint (take it before binding the heads)");
  const MedusaConfig& c = heads.config();
  Fnv1a64 h;
  h.update_u64(static_cast<uint64_t>(c.num_heads));
  h.update_u64(static_cast<uint64_t>(c.num_layers));
  h.update_u64((c.fc_bias ? 1u : 0u) | (c.shared_lm_head ? 2u : 0u));
  uint32_t scale = 0;
  std::memcpy(&scale, &c.logit_scale, sizeof scale);
  h.update_u64(scale);
  MedusaWeights& w = const_cast<MedusaWeights&>(heads.weights());  // medusa_tensors only takes addresses
  for (const MedusaTensor& t : medusa_tensors(c, w)) {
    if (t.m) {
      h.update(*t.m);
    } else {
      h.update(*t.v);
    }
  }
  return h.str();
}

}  // namespace specdec
