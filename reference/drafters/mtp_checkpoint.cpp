#include "reference/drafters/mtp_checkpoint.hpp"

#include <algorithm>
#include <climits>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <span>
#include <sstream>
#include <system_error>

#include "reference/core/error.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafters/eagle_tensors.hpp"
#include "reference/drafters/medusa_checkpoint.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/tensor_store.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kMaxModules = 64;        // DeepSeek-V3 ships 1; more than this is a malformed file
constexpr int kMaxModuleLayers = 64;

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

std::string speculators_type(const json& j) {
  if (!j.is_object() || !j.contains("speculators_model_type") || !j["speculators_model_type"].is_string()) return "";
  return j["speculators_model_type"].get<std::string>();
}

// The index N of every "model.layers.{N}.eh_proj.weight" / ".enorm.weight" (DeepSeek-V3's modules).
std::set<int> deepseek_module_layers(const std::vector<std::string>& names) {
  static const std::regex pattern(R"(model\.layers\.(\d{1,6})\.(eh_proj|enorm|hnorm)\.weight)");
  std::set<int> out;
  std::smatch m;
  for (const std::string& n : names)
    if (std::regex_match(n, m, pattern)) out.insert(std::stoi(m[1].str()));
  return out;
}

// The index j of every "{prefix}{j}.input_proj.weight" / "token_layernorm" (MiMo, speculators).
std::set<int> numbered_modules(const std::vector<std::string>& names, const std::string& prefix) {
  const std::regex pattern(std::regex_replace(prefix, std::regex(R"(\.)"), R"(\.)") +
                           R"((\d{1,6})\.(input_proj|token_layernorm|hidden_layernorm)\.weight)");
  std::set<int> out;
  std::smatch m;
  for (const std::string& n : names)
    if (std::regex_match(n, m, pattern)) out.insert(std::stoi(m[1].str()));
  return out;
}

std::string layout_of(const json& j, const std::vector<std::string>& names) {
  if (speculators_type(j) == "mtp") return "speculators";
  for (const std::string& n : names) {
    if (starts_with(n, "mtp.")) return "qwen3_next";
    if (starts_with(n, "model.mtp_layers.")) return "mimo";
  }
  if (!deepseek_module_layers(names).empty()) return "deepseek";
  return "";
}

int config_int(const json& j, const char* key, int fallback, int lo, int hi, const std::string& source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  const json& v = j[key];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) {
    throw Error(source + ": field '" + key + "' must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                "], got " + v.dump());
  }
  return static_cast<int>(v.get<int64_t>());
}

// Refuses a module tensor that belongs to a layer kind specdec does not compute.
void refuse_unsupported_layer(const std::string& name, const fs::path& file) {
  const char* feature = nullptr;
  if (contains(name, "mlp.experts.") || contains(name, "mlp.shared_expert") || contains(name, "mlp.gate.weight") ||
      contains(name, "e_score_correction_bias") || contains(name, "block_sparse_moe.")) {
    feature = "a mixture-of-experts MLP";
  } else if (contains(name, "q_a_proj") || contains(name, "q_b_proj") || contains(name, "kv_a_proj_with_mqa") ||
             contains(name, "kv_b_proj") || contains(name, "kv_a_layernorm") || contains(name, "q_a_layernorm")) {
    feature = "multi-head latent attention (MLA)";
  } else if (contains(name, "linear_attn.")) {
    feature = "linear attention (Gated DeltaNet)";
  }
  if (feature) {
    throw Error(file.string() + ": tensor '" + name + "' belongs to " + feature +
                ", which specdec does not implement; this MTP module's decoder layer cannot be computed");
  }
}

// The module's layer shape is the target's: its architecture's options, one module's layers.
ModelConfig module_layer_config(const ModelConfig& target, int layers) {
  ModelConfig layer = target;
  layer.num_hidden_layers = layers;
  return layer;
}

// The sizes a target-style config.json states must be the target's.
void check_config_sizes(const json& j, const ModelConfig& target, const std::string& source) {
  const std::pair<const char*, int> fields[] = {{"hidden_size", target.hidden_size},
                                                {"vocab_size", target.vocab_size},
                                                {"num_attention_heads", target.num_attention_heads},
                                                {"num_key_value_heads", target.num_key_value_heads},
                                                {"intermediate_size", target.intermediate_size}};
  for (const auto& [key, want] : fields) {
    if (!j.contains(key) || j[key].is_null()) continue;
    if (!j[key].is_number_integer() || j[key].get<int64_t>() != want) {
      throw Error(source + ": field '" + key + "' is " + j[key].dump() + ", the target's is " + std::to_string(want) +
                  " (an MTP module's decoder layer has the target's shape)");
    }
  }
}

// Writes config.json and model.safetensors of the modules into the existing directory `dir`.
void write_mtp_files(const fs::path& dir, const std::vector<EagleHead>& modules, Dtype dtype) {
  SafetensorsWriter writer;
  writer.set_metadata("format", "pt");
  for (const EagleHead& m : modules) {
    m.require_weights("save_mtp_modules");
    EagleWeights& w = const_cast<EagleWeights&>(m.weights());  // eagle_tensors only takes addresses
    for (const EagleTensor& t : eagle_tensors(m.config(), w)) {
      const float* data = t.m ? t.m->data() : t.v->data();
      const std::size_t n = static_cast<std::size_t>(t.m ? t.m->size() : t.v->size());
      writer.add_floats(t.name, dtype, t.stored_shape, std::span<const float>(data, n));
    }
  }
  writer.write(dir / "model.safetensors");
  EagleHeadConfig c = modules.front().config();
  c.layer.torch_dtype = dtype == Dtype::F32 ? "float32" : dtype == Dtype::F16 ? "float16" : "bfloat16";
  write_file_atomically(dir / "config.json", mtp_config_to_json(c, modules.front().target().config().architecture).dump(2) + "\n");
}

}  // namespace

bool is_mtp_checkpoint(const json& config, const std::vector<std::string>& names) {
  return !layout_of(config, names).empty();
}

MtpCheckpointInfo describe_mtp_checkpoint(const json& j, const std::vector<std::string>& names) {
  MtpCheckpointInfo info;
  info.layout = layout_of(j, names);
  if (info.layout.empty()) return info;
  std::string prefix;
  if (info.layout == "deepseek") {
    const std::set<int> found = deepseek_module_layers(names);
    info.modules = static_cast<int>(found.size());
    const std::string p0 = "model.layers." + std::to_string(*found.begin()) + ".";
    info.own_lm_head = std::find(names.begin(), names.end(), p0 + "shared_head.head.weight") != names.end();
    info.own_embeddings = std::find(names.begin(), names.end(), p0 + "embed_tokens.weight") != names.end();
    for (const std::string& n : names)
      for (int m : found)
        if (starts_with(n, "model.layers." + std::to_string(m) + ".")) info.tensors.push_back(n);
    return info;
  }
  if (info.layout == "qwen3_next") {
    info.modules = 1;
    info.layers = j.contains("mtp_num_hidden_layers") && j["mtp_num_hidden_layers"].is_number_integer()
                      ? j["mtp_num_hidden_layers"].get<int>() : 1;
    prefix = "mtp.";
  } else {
    prefix = info.layout == "mimo" ? "model.mtp_layers." : "mtp_layers.";
    info.modules = static_cast<int>(numbered_modules(names, prefix).size());
  }
  for (const std::string& n : names)
    if (starts_with(n, prefix)) info.tensors.push_back(n);
  return info;
}

std::vector<EagleHead> load_mtp_modules(const fs::path& path, const TargetTensors& target) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("MTP checkpoint '" + path.string() + "' does not exist");
  if (is_medusa_checkpoint(path)) {
    throw Error("'" + path.string() + "' holds Medusa heads, not MTP modules (decode with --method medusa)");
  }
  const fs::path dir = fs::is_directory(path, ec) ? path : path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const fs::path config_path = dir / "config.json";
  const std::string source = config_path.string();
  const json j = read_drafter_config(config_path);
  if (!j.is_object()) throw Error(source + ": config must be a JSON object");
  const TensorStore store(path);
  const std::vector<std::string> names = store.names();
  const std::string layout = layout_of(j, names);
  if (layout.empty()) {
    throw Error("'" + path.string() + "' holds no MTP module: expected model.layers.{L+j}.eh_proj (DeepSeek-V3), mtp.fc "
                "(Qwen3-Next), model.mtp_layers.{j}.input_proj (MiMo) or a speculators config with "
                "speculators_model_type \"mtp\"");
  }
  const ModelConfig& t = target.config();

  // How many modules, and where each lives.
  int modules = 1, layers = 1;
  int L = t.num_hidden_layers;  // DeepSeek-V3 names module j model.layers.{L + j}
  std::string module_prefix;    // every tensor of every module starts with it (DeepSeek: per module)
  if (layout == "speculators") {
    if (!j.contains("transformer_layer_config") || !j["transformer_layer_config"].is_object()) {
      throw Error(source + ": speculators MTP config has no 'transformer_layer_config' object");
    }
    const json& tc = j["transformer_layer_config"];
    check_config_sizes(tc, t, source + " (transformer_layer_config)");
    modules = config_int(j, "num_nextn_predict_layers", 1, 1, kMaxModules, source);
    module_prefix = "mtp_layers.";
  } else {
    check_config_sizes(j, t, source);
    if (layout == "deepseek") {
      L = config_int(j, "num_hidden_layers", t.num_hidden_layers, 0, INT_MAX - kMaxModules, source);
      if (L != t.num_hidden_layers) {
        throw Error(source + ": num_hidden_layers is " + std::to_string(L) + ", the target has " +
                    std::to_string(t.num_hidden_layers) + " (DeepSeek-V3's module j is model.layers.{num_hidden_layers + j})");
      }
      const std::set<int> found = deepseek_module_layers(names);
      modules = config_int(j, "num_nextn_predict_layers", static_cast<int>(found.size()), 1, kMaxModules, source);
      for (int m : found) {
        if (m < L || m >= L + modules) {
          throw Error("MTP checkpoint '" + path.string() + "': an MTP module at model.layers." + std::to_string(m) +
                      ", expected model.layers." + std::to_string(L) + " .. " + std::to_string(L + modules - 1) +
                      " (num_hidden_layers " + std::to_string(L) + ", num_nextn_predict_layers " + std::to_string(modules) + ")");
        }
      }
    } else if (layout == "qwen3_next") {
      layers = config_int(j, "mtp_num_hidden_layers", 1, 1, kMaxModuleLayers, source);
      module_prefix = "mtp.";
    } else {  // mimo
      modules = config_int(j, "num_nextn_predict_layers", static_cast<int>(numbered_modules(names, "model.mtp_layers.").size()),
                           1, kMaxModules, source);
      module_prefix = "model.mtp_layers.";
    }
  }
  auto in_module = [&](const std::string& n) {
    if (layout != "deepseek") return starts_with(n, module_prefix);
    for (int m = 0; m < modules; ++m)
      if (starts_with(n, "model.layers." + std::to_string(L + m) + ".")) return true;
    return false;
  };
  for (const std::string& n : names)
    if (in_module(n)) refuse_unsupported_layer(n, store.file_of(n));

  std::set<std::string> consumed;
  std::vector<EagleHead> out;
  for (int m = 0; m < modules; ++m) {
    EagleHeadConfig c;
    c.kind = EagleKind::mtp;
    c.layout = layout;
    c.layer = module_layer_config(t, layers);
    // The precision the module is stored in, as the file states it.
    if (j.contains("torch_dtype") && j["torch_dtype"].is_string()) c.layer.torch_dtype = j["torch_dtype"].get<std::string>();
    c.num_layers = layers;
    c.target_hidden = t.hidden_size;
    c.target_vocab = c.draft_vocab = t.vocab_size;
    c.hidden_first = layout == "mimo";
    c.module = m;
    c.num_modules = modules;
    c.target_layers = L;
    const MtpNames n = mtp_names(c);
    c.own_embeddings = store.has(n.embed_tokens);
    c.own_lm_head = store.has(n.lm_head);
    validate_eagle_config(c, source);
    check_eagle_config_against_target(c, t, source);
    const std::string what = "MTP module " + std::to_string(m) + " in the " + layout + " layout";
    EagleWeights w;
    w.layers.resize(static_cast<std::size_t>(layers));
    for (const EagleTensor& e : eagle_tensors(c, w)) {
      if (!store.has(e.name)) {
        throw Error("MTP checkpoint '" + path.string() + "': missing tensor '" + e.name + "' (expected for " + what +
                    " with the target's layer shape)");
      }
      if (e.m) {
        *e.m = store.matrix(e.name, e.rows, e.cols);
      } else {
        *e.v = store.vector(e.name, e.rows);
      }
      consumed.insert(e.name);
    }
    out.emplace_back(std::move(c), std::move(w), target, "MTP checkpoint '" + path.string() + "' module " + std::to_string(m));
  }
  for (const std::string& n : names) {
    if (in_module(n) && !consumed.count(n)) {
      throw Error(store.file_of(n).string() + ": unexpected tensor '" + n + "': an MTP module of the " + layout +
                  " layout with the target's layer shape has no place for it");
    }
  }
  return out;
}

void save_mtp_modules(const fs::path& dir_arg, const std::vector<EagleHead>& modules, Dtype dtype) {
  if (modules.empty()) throw Error("save_mtp_modules: no modules given");
  for (std::size_t m = 0; m < modules.size(); ++m) {
    const EagleHeadConfig& c = modules[m].config();
    if (c.kind != EagleKind::mtp || c.module != static_cast<int>(m) || c.num_modules != static_cast<int>(modules.size()) ||
        c.layout != modules.front().config().layout) {
      throw Error("save_mtp_modules: entry " + std::to_string(m) + " is not module " + std::to_string(m) + " of " +
                  std::to_string(modules.size()) + " MTP modules of one layout");
    }
  }
  if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16) {
    throw Error("MTP modules are saved as F32, F16 or BF16, not " + dtype_name(dtype));
  }
  const fs::path dir = dir_arg.filename().empty() && dir_arg.has_parent_path() ? dir_arg.parent_path() : dir_arg;
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    write_directory_atomically(dir, "MTP checkpoint", [&](const fs::path& tmp) { write_mtp_files(tmp, modules, dtype); });
    return;
  }
  if (!fs::is_directory(dir, ec)) throw Error("cannot save MTP modules to '" + dir.string() + "': it exists and is not a directory");
  write_mtp_files(dir, modules, dtype);
}

json mtp_config_to_json(const EagleHeadConfig& c, const std::string& target_architecture) {
  ModelConfig model = c.layer;  // the target's config: its layer count, not the module's
  model.num_hidden_layers = c.target_layers;
  json j = model_config_to_json(model);
  if (c.layout == "speculators") {
    json s;
    s["architectures"] = json::array({"MTPDraftModel"});
    s["speculators_model_type"] = "mtp";
    s["transformer_layer_config"] = j;
    s["num_nextn_predict_layers"] = c.num_modules;
    s["speculators_config"] = {
        {"algorithm", "mtp"},
        {"default_proposal_method", "greedy"},
        {"proposal_methods", json::array({{{"proposal_type", "greedy"}, {"speculative_tokens", 3}}})},
        {"verifier", {{"architectures", json::array({target_architecture})}, {"name_or_path", nullptr}}}};
    s["torch_dtype"] = c.layer.torch_dtype;
    return s;
  }
  if (c.layout == "qwen3_next") {
    j["mtp_num_hidden_layers"] = c.num_layers;
  } else {
    j["num_nextn_predict_layers"] = c.num_modules;
  }
  return j;
}

}  // namespace specdec
