#include "reference/io/llama_checkpoint.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <span>
#include <system_error>
#include <type_traits>
#include <variant>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/fingerprint.hpp"
#include "reference/io/checkpoint_reader.hpp"
#include "reference/io/gguf_checkpoint.hpp"
#include "reference/io/tensor_store.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

// One tensor of the checkpoint: its name and where it lives in LlamaWeights. Exactly one of m, v
// is set; a vector has shape [rows].
struct Slot {
  std::string name;
  Matrix* m = nullptr;
  Vector* v = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;

  std::vector<int64_t> shape() const { return m ? std::vector<int64_t>{rows, cols} : std::vector<int64_t>{rows}; }
  std::vector<int64_t> actual_shape() const {
    return m ? std::vector<int64_t>{m->rows(), m->cols()} : std::vector<int64_t>{v->size()};
  }
};

// Layer i's tensors `c` calls for, in checkpoint order, appended to s.
void add_layer_slots(const ModelConfig& c, LayerWeights& l, int i, const std::string& prefix, std::vector<Slot>& s) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  const int64_t q = c.q_dim(), kv = c.kv_dim(), hd = c.head_dim;
  auto mat = [&](std::string name, Matrix& m, int64_t rows, int64_t cols) {
    s.push_back({std::move(name), &m, nullptr, rows, cols});
  };
  auto vec = [&](std::string name, Vector& v, int64_t n) { s.push_back({std::move(name), nullptr, &v, n, 0}); };
  const std::string p = prefix + "layers." + std::to_string(i) + ".";
  vec(p + "input_layernorm.weight", l.input_layernorm, H);
  mat(p + "self_attn.q_proj.weight", l.q_proj, q, H);
  if (c.attention_bias) vec(p + "self_attn.q_proj.bias", l.q_bias, q);
  mat(p + "self_attn.k_proj.weight", l.k_proj, kv, H);
  if (c.attention_bias) vec(p + "self_attn.k_proj.bias", l.k_bias, kv);
  mat(p + "self_attn.v_proj.weight", l.v_proj, kv, H);
  if (c.attention_bias) vec(p + "self_attn.v_proj.bias", l.v_bias, kv);
  mat(p + "self_attn.o_proj.weight", l.o_proj, H, q);
  if (c.o_proj_bias) vec(p + "self_attn.o_proj.bias", l.o_bias, H);
  if (c.qk_norm) {
    vec(p + "self_attn.q_norm.weight", l.q_norm, hd);
    vec(p + "self_attn.k_norm.weight", l.k_norm, hd);
  }
  vec(p + "post_attention_layernorm.weight", l.post_attention_layernorm, H);
  mat(p + "mlp.gate_proj.weight", l.gate_proj, I, H);
  if (c.mlp_bias) vec(p + "mlp.gate_proj.bias", l.gate_bias, I);
  mat(p + "mlp.up_proj.weight", l.up_proj, I, H);
  if (c.mlp_bias) vec(p + "mlp.up_proj.bias", l.up_bias, I);
  mat(p + "mlp.down_proj.weight", l.down_proj, H, I);
  if (c.mlp_bias) vec(p + "mlp.down_proj.bias", l.down_bias, H);
}

// The tensors `c` calls for, in checkpoint order (the order Hugging Face's state_dict uses).
// w.layers must already have c.num_hidden_layers entries.
std::vector<Slot> checkpoint_slots(const ModelConfig& c, LlamaWeights& w, const std::string& prefix) {
  const int64_t H = c.hidden_size, V = c.vocab_size;
  std::vector<Slot> s;
  s.push_back({prefix + "embed_tokens.weight", &w.embed_tokens, nullptr, V, H});
  for (int i = 0; i < c.num_hidden_layers; ++i) add_layer_slots(c, w.layers[static_cast<std::size_t>(i)], i, prefix, s);
  s.push_back({prefix + "norm.weight", nullptr, &w.norm, H, 0});
  if (!c.tie_word_embeddings) s.push_back({"lm_head.weight", &w.lm_head, nullptr, V, H});
  return s;
}

// Reads every slot from `reader`, each converted straight into place.
void read_slots(const CheckpointReader& reader, const std::vector<Slot>& slots) {
  for (const Slot& s : slots) {
    // A missing lm_head says why it was looked for.
    reader.check_shape(s.name, s.rows, s.m ? s.cols : 0,
                       s.name == "lm_head.weight" ? " (config.json has tie_word_embeddings false)" : "");
    if (s.m) {
      *s.m = reader.matrix(s.name, s.rows, s.cols);
    } else {
      *s.v = reader.vector(s.name, s.rows);
    }
  }
}

std::string dtype_to_torch(Dtype dtype) {
  switch (dtype) {
    case Dtype::F32: return "float32";
    case Dtype::F16: return "float16";
    case Dtype::BF16: return "bfloat16";
    default:
      throw Error("checkpoints are saved as F32, F16 or BF16, not " + dtype_name(dtype));
  }
}

std::string shard_name(std::size_t k, std::size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", k, n);
  return buf;
}

// Writes every file of the checkpoint into `dir`, which exists; returns the weight file names.
std::set<std::string> write_checkpoint_files(const fs::path& dir, const ModelConfig& config,
                                             const std::vector<Slot>& slots, Dtype dtype,
                                             std::size_t max_shard_bytes) {
  // Plan the shards greedily in checkpoint order, as Hugging Face's save_pretrained does.
  const std::size_t elem = dtype_size(dtype);
  std::vector<std::vector<const Slot*>> shards(1);
  std::size_t shard_bytes = 0, total_bytes = 0;
  for (const Slot& s : slots) {
    const std::size_t bytes = static_cast<std::size_t>(s.m ? s.m->size() : s.v->size()) * elem;
    if (max_shard_bytes > 0 && !shards.back().empty() && shard_bytes + bytes > max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(&s);
    shard_bytes += bytes;
    total_bytes += bytes;
  }

  auto write_shard = [&](const std::vector<const Slot*>& members, const fs::path& path) {
    SafetensorsWriter writer;
    writer.set_metadata("format", "pt");  // transformers refuses files without a known format
    for (const Slot* s : members) {
      if (s->m) {
        writer.add_floats(s->name, dtype, s->shape(), std::span<const float>(s->m->data(), s->m->size()));
      } else {
        writer.add_floats(s->name, dtype, s->shape(), std::span<const float>(s->v->data(), s->v->size()));
      }
    }
    writer.write(path);
  };

  std::set<std::string> written;
  if (shards.size() == 1) {
    write_shard(shards.front(), dir / kSingleFile);
    written.insert(kSingleFile);
  } else {
    nlohmann::json weight_map = nlohmann::json::object();
    for (std::size_t k = 0; k < shards.size(); ++k) {
      const std::string name = shard_name(k + 1, shards.size());
      write_shard(shards[k], dir / name);
      written.insert(name);
      for (const Slot* s : shards[k]) weight_map[s->name] = name;
    }
    const nlohmann::json index = {{"metadata", {{"total_size", total_bytes}}}, {"weight_map", weight_map}};
    write_file_atomically(dir / kIndexFile, index.dump(2) + "\n");
    written.insert(kIndexFile);
  }
  ModelConfig saved = config;
  saved.torch_dtype = dtype_to_torch(dtype);
  save_model_config(dir / "config.json", saved);
  return written;
}

}  // namespace

void check_checkpoint_weights(const ModelConfig& c, const LlamaWeights& weights, const std::string& source) {
  if (weights.layers.size() != static_cast<std::size_t>(c.num_hidden_layers)) {
    throw Error(source + ": weights have " + std::to_string(weights.layers.size()) +
                " layers, config num_hidden_layers is " + std::to_string(c.num_hidden_layers));
  }
  // checkpoint_slots only takes addresses; nothing is modified.
  LlamaWeights& w = const_cast<LlamaWeights&>(weights);
  for (const Slot& s : checkpoint_slots(c, w, "model.")) {
    if (s.actual_shape() != s.shape()) {
      throw Error(source + ": tensor '" + s.name + "' has shape " + shape_string(s.actual_shape()) +
                  ", the config calls for " + shape_string(s.shape()));
    }
  }
  // Tensors the config has no place for would be silently dropped on save.
  auto unexpected = [&](const std::string& name, Eigen::Index size, const char* why) {
    if (size != 0) throw Error(source + ": weights carry '" + name + "' but the config " + why);
  };
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const LayerWeights& l = w.layers[i];
    const std::string p = "model.layers." + std::to_string(i) + ".";
    if (!c.attention_bias) {
      unexpected(p + "self_attn.q_proj.bias", l.q_bias.size(), "has no attention biases");
      unexpected(p + "self_attn.k_proj.bias", l.k_bias.size(), "has no attention biases");
      unexpected(p + "self_attn.v_proj.bias", l.v_bias.size(), "has no attention biases");
    }
    if (!c.o_proj_bias) unexpected(p + "self_attn.o_proj.bias", l.o_bias.size(), "has no o_proj bias");
    if (!c.qk_norm) {
      unexpected(p + "self_attn.q_norm.weight", l.q_norm.size(), "has no q/k norm");
      unexpected(p + "self_attn.k_norm.weight", l.k_norm.size(), "has no q/k norm");
    }
    if (!c.mlp_bias) {
      unexpected(p + "mlp.gate_proj.bias", l.gate_bias.size(), "has no mlp_bias");
      unexpected(p + "mlp.up_proj.bias", l.up_bias.size(), "has no mlp_bias");
      unexpected(p + "mlp.down_proj.bias", l.down_bias.size(), "has no mlp_bias");
    }
  }
  if (c.tie_word_embeddings) unexpected("lm_head.weight", w.lm_head.size(), "ties the word embeddings");
}

namespace {

// generation_config.json's eos_token_id (an id or a list), when the file has one, replaces
// config.json's as the tokens that end generation, as transformers' generate() does: chat models
// list their end-of-turn tokens there.
void apply_generation_config(const fs::path& file, ModelConfig& c) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return;
  const nlohmann::json j = read_json_file(file.string(), "generation config");
  if (!j.is_object() || !j.contains("eos_token_id") || j.at("eos_token_id").is_null()) return;
  const nlohmann::json& v = j.at("eos_token_id");
  std::vector<int> ids;
  for (const nlohmann::json& e : v.is_array() ? v : nlohmann::json::array({v})) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= c.vocab_size) {
      throw Error(file.string() + ": field 'eos_token_id' must be token ids in [0, " + std::to_string(c.vocab_size) +
                  ") (config.json's vocab_size), got " + v.dump());
    }
    ids.push_back(static_cast<int>(e.get<int64_t>()));
  }
  c.eos_token_ids = ids;
}

}  // namespace

ModelConfig load_checkpoint_config(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) throw Error("checkpoint '" + path.string() + "' does not exist");
  if (is_gguf_file(path)) return parse_model_config(gguf_hf_config(GgufFile(path)), path.string());
  // A weight file (.safetensors or the shard index) takes its config.json from its directory.
  const fs::path dir = fs::is_directory(path, ec) ? path : path.parent_path().empty() ? fs::path(".") : path.parent_path();
  ModelConfig c = load_model_config(dir / "config.json");
  apply_generation_config(dir / "generation_config.json", c);
  return c;
}

LlamaModel load_llama_checkpoint(const fs::path& path) {
  const CheckpointReader reader(path);
  LlamaModel model;
  model.config = reader.config();
  model.weights.layers.resize(static_cast<std::size_t>(model.config.num_hidden_layers));
  read_slots(reader, checkpoint_slots(model.config, model.weights, "model."));
  check_checkpoint_weights(model.config, model.weights, path.string());
  return model;
}

std::array<std::string, 7> layer_matrix_names(int layer) {
  // Read off the slots, so the names are written once (add_layer_slots).
  ModelConfig c;
  LayerWeights l;
  std::vector<Slot> slots;
  add_layer_slots(c, l, layer, "model.", slots);
  std::array<std::string, 7> names;
  const auto matrices = layer_matrices(l);
  for (const Slot& s : slots)
    for (std::size_t k = 0; k < matrices.size(); ++k)
      if (s.m == matrices[k]) names[k] = s.name;
  return names;
}

LayerWeights load_layer_weights(const CheckpointReader& reader, int layer, bool with_matrices) {
  LayerWeights l;
  std::vector<Slot> slots;
  add_layer_slots(reader.config(), l, layer, "model.", slots);
  if (!with_matrices) {
    for (const Slot& s : slots)
      if (s.m) reader.check_shape(s.name, s.rows, s.cols);
    std::erase_if(slots, [](const Slot& s) { return s.m != nullptr; });
  }
  read_slots(reader, slots);
  return l;
}

void save_llama_checkpoint(const fs::path& dir_arg, const ModelConfig& config, const LlamaWeights& weights,
                           Dtype dtype, std::size_t max_shard_bytes) {
  // "out/" names the directory "out".
  const fs::path dir = dir_arg.filename().empty() && dir_arg.has_parent_path() ? dir_arg.parent_path() : dir_arg;
  dtype_to_torch(dtype);  // rejects other dtypes before anything is written
  validate_model_config(config, "config for '" + dir.string() + "'");
  check_checkpoint_weights(config, weights, "weights for '" + dir.string() + "'");
  const std::vector<Slot> slots = checkpoint_slots(config, const_cast<LlamaWeights&>(weights), "model.");

  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    write_directory_atomically(dir, "checkpoint", [&](const fs::path& tmp) { write_checkpoint_files(tmp, config, slots, dtype, max_shard_bytes); });
    return;
  }
  if (!fs::is_directory(dir, ec)) {
    throw Error("cannot save checkpoint to '" + dir.string() + "': it exists and is not a directory");
  }
  const std::set<std::string> written = write_checkpoint_files(dir, config, slots, dtype, max_shard_bytes);
  // Remove weight files of an earlier save in another layout: Hugging Face (and TensorStore)
  // would prefer a stale model.safetensors over a new index.
  static const std::regex shard_pattern(R"(model-\d{5}-of-\d{5}\.safetensors)");
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    const bool weight_file = name == kSingleFile || name == kIndexFile || std::regex_match(name, shard_pattern);
    if (weight_file && !written.count(name)) fs::remove(e.path(), ec);
  }
}

namespace {

// The order fingerprints hash a layer's tensors in: LayerWeights' declaration order.
using LayerTensor = std::variant<Vector LayerWeights::*, Matrix LayerWeights::*>;
constexpr LayerTensor kHashOrder[] = {
    &LayerWeights::input_layernorm, &LayerWeights::q_proj,    &LayerWeights::k_proj,    &LayerWeights::v_proj,
    &LayerWeights::q_bias,          &LayerWeights::k_bias,    &LayerWeights::v_bias,    &LayerWeights::o_proj,
    &LayerWeights::o_bias,          &LayerWeights::q_norm,    &LayerWeights::k_norm,    &LayerWeights::post_attention_layernorm,
    &LayerWeights::gate_proj,       &LayerWeights::up_proj,   &LayerWeights::down_proj, &LayerWeights::gate_bias,
    &LayerWeights::up_bias,         &LayerWeights::down_bias,
};

// As Fnv1a64::update(Matrix) for tensor `name` ([rows, cols]) read a chunk of rows at a time.
void hash_streamed(Fnv1a64& h, const CheckpointReader& reader, const std::string& name, int64_t rows, int64_t cols) {
  reader.check_shape(name, rows, cols);
  h.update_u64(static_cast<uint64_t>(rows));
  h.update_u64(static_cast<uint64_t>(cols));
  const int64_t chunk = std::max<int64_t>(1, (int64_t(1) << 18) / cols);
  std::vector<float> buffer(static_cast<std::size_t>(std::min(chunk, rows) * cols));
  for (int64_t first = 0; first < rows; first += chunk) {
    const int64_t n = std::min(chunk, rows - first);
    reader.read_rows(name, first, n, buffer.data());
    h.update(buffer.data(), static_cast<std::size_t>(n * cols) * sizeof(float));
  }
  reader.release(name);
}

}  // namespace

void hash_layer_weights(Fnv1a64& h, const LayerWeights& l) {
  for (const LayerTensor& t : kHashOrder) std::visit([&](auto member) { h.update(l.*member); }, t);
}

std::string weights_fingerprint(const CheckpointReader& reader) {
  const ModelConfig& c = reader.config();
  Fnv1a64 h;
  hash_streamed(h, reader, "model.embed_tokens.weight", c.vocab_size, c.hidden_size);
  for (int i = 0; i < c.num_hidden_layers; ++i) {
    // The layer's tensors as the checkpoint holds them, hashed in kHashOrder; an absent one as empty.
    LayerWeights l;
    std::vector<Slot> slots;
    add_layer_slots(c, l, i, "model.", slots);
    for (const LayerTensor& t : kHashOrder) {
      std::visit(
          [&](auto member) {
            auto* target = &(l.*member);
            const auto s = std::find_if(slots.begin(), slots.end(), [&](const Slot& x) {
              if constexpr (std::is_same_v<decltype(target), Matrix*>) {
                return x.m == target;
              } else {
                return x.v == target;
              }
            });
            if (s == slots.end()) {
              h.update(*target);  // empty: its zero dimensions
            } else if (s->m) {
              hash_streamed(h, reader, s->name, s->rows, s->cols);
            } else {
              h.update(reader.vector(s->name, s->rows));
            }
          },
          t);
    }
  }
  h.update(reader.vector("model.norm.weight", c.hidden_size));
  if (c.tie_word_embeddings) {
    h.update(Matrix());
  } else {
    hash_streamed(h, reader, "lm_head.weight", c.vocab_size, c.hidden_size);
  }
  return h.str();
}

std::string weights_fingerprint(const LlamaWeights& w) {
  Fnv1a64 h;
  h.update(w.embed_tokens);
  for (const LayerWeights& l : w.layers) hash_layer_weights(h, l);
  h.update(w.norm);
  h.update(w.lm_head);
  return h.str();
}

}  // namespace specdec
