#include "reference/model/model_config.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <fstream>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/json_input.hpp"

namespace specdec {
namespace {

using nlohmann::json;

// Defaults of the Hugging Face config classes (LlamaConfig, MistralConfig, Qwen2Config,
// Qwen3Config), applied when a key is absent: files written with to_diff_dict() omit keys equal
// to these.
struct ClassDefaults {
  const char* architecture;
  int vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads;
  int num_key_value_heads;  // 0 = num_attention_heads
  int head_dim;             // 0 = hidden_size / num_attention_heads
  int max_position_embeddings;
  int bos_token_id, eos_token_id;  // -1 = none
  int sliding_window;              // default window when the model uses one
  int max_window_layers;
};

const ClassDefaults* class_defaults(const std::string& model_type) {
  static const ClassDefaults llama{"LlamaForCausalLM", 32000, 4096, 11008, 32, 32, 0, 0, 2048, 1, 2, 0, 0};
  static const ClassDefaults mistral{"MistralForCausalLM", 32000, 4096, 14336, 32, 32, 8, 0, 131072, 1, 2, 4096, 0};
  static const ClassDefaults qwen2{"Qwen2ForCausalLM", 151936, 4096, 22016, 32, 32, 32, 0, 32768, -1, -1, 4096, 28};
  static const ClassDefaults qwen3{"Qwen3ForCausalLM", 151936, 4096, 22016, 32, 32, 32, 128, 32768, -1, -1, 4096, 28};
  if (model_type == "llama") return &llama;
  if (model_type == "mistral") return &mistral;
  if (model_type == "qwen2") return &qwen2;
  if (model_type == "qwen3") return &qwen3;
  return nullptr;
}

std::string model_type_from_architecture(const std::string& arch) {
  if (arch.rfind("Llama", 0) == 0) return "llama";
  if (arch.rfind("Mistral", 0) == 0) return "mistral";
  if (arch.rfind("Qwen2", 0) == 0) return "qwen2";
  if (arch.rfind("Qwen3", 0) == 0) return "qwen3";
  return "";
}

[[noreturn]] void fail(const std::string& source, const std::string& message) {
  throw Error(source + ": " + message);
}

std::string type_name(const json& v) { return v.type_name(); }

bool present(const json& obj, const char* key) { return obj.contains(key) && !obj.at(key).is_null(); }

int json_to_int(const json& v, const std::string& field, const std::string& source) {
  if (!v.is_number_integer()) {
    fail(source, "field '" + field + "' must be an integer, got " + type_name(v) + " " + v.dump());
  }
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT_MAX)) fail(source, "field '" + field + "' = " + v.dump() + " is too large");
    return static_cast<int>(u);
  }
  const auto i = v.get<int64_t>();
  if (i > INT_MAX || i < INT_MIN) fail(source, "field '" + field + "' = " + v.dump() + " is out of range");
  return static_cast<int>(i);
}

int get_int(const json& obj, const char* key, int fallback, const std::string& source,
            const std::string& where = "") {
  if (!present(obj, key)) return fallback;
  return json_to_int(obj.at(key), where + key, source);
}

double get_double(const json& obj, const char* key, double fallback, const std::string& source,
                  const std::string& where = "") {
  if (!present(obj, key)) return fallback;
  const json& v = obj.at(key);
  if (!v.is_number()) {
    fail(source, "field '" + where + key + "' must be a number, got " + type_name(v) + " " + v.dump());
  }
  return v.get<double>();
}

bool get_bool(const json& obj, const char* key, bool fallback, const std::string& source) {
  if (!present(obj, key)) return fallback;
  const json& v = obj.at(key);
  if (!v.is_boolean()) {
    fail(source, std::string("field '") + key + "' must be true or false, got " + type_name(v) + " " + v.dump());
  }
  return v.get<bool>();
}

std::string get_string(const json& obj, const char* key, const std::string& fallback,
                       const std::string& source, const std::string& where = "") {
  if (!present(obj, key)) return fallback;
  const json& v = obj.at(key);
  if (!v.is_string()) {
    fail(source, "field '" + where + key + "' must be a string, got " + type_name(v) + " " + v.dump());
  }
  return v.get<std::string>();
}

// Parses a rope_scaling / rope_parameters object. `field` is the key it came from. Returns the
// scaling and, through `theta`, a rope_theta stored inside it (rope_parameters), if any.
RopeScaling parse_rope_object(const json& r, const std::string& field, int max_position_embeddings,
                              const std::string& source, double* theta) {
  if (!r.is_object()) {
    fail(source, "field '" + field + "' must be an object or null, got " + type_name(r) + " " + r.dump());
  }
  const std::string where = field + ".";
  if (!r.contains("rope_type") && !r.contains("type") && !r.empty() &&
      std::all_of(r.begin(), r.end(), [](const json& v) { return v.is_object(); })) {
    fail(source, "field '" + field +
                     "' holds per-layer-type rope parameters; only one set for all layers is supported");
  }
  // Hugging Face reads "rope_type" first and falls back to the legacy "type".
  std::string type = get_string(r, "type", "default", source, where);
  type = get_string(r, "rope_type", type, source, where);
  if (present(r, "rope_theta") && theta != nullptr) {
    *theta = get_double(r, "rope_theta", 0.0, source, where);
  }
  if (present(r, "partial_rotary_factor") &&
      get_double(r, "partial_rotary_factor", 1.0, source, where) != 1.0) {
    fail(source, "field '" + where + "partial_rotary_factor' other than 1 is not supported");
  }

  RopeScaling s;
  auto require = [&](const char* key) {
    if (!present(r, key)) {
      fail(source, "field '" + field + "' of rope_type '" + type + "' is missing '" + key + "'");
    }
  };
  if (type == "default") return s;
  if (type == "linear") {
    s.type = RopeScaling::Type::linear;
    require("factor");
    s.factor = get_double(r, "factor", 1.0, source, where);
  } else if (type == "dynamic") {
    s.type = RopeScaling::Type::dynamic;
    require("factor");
    s.factor = get_double(r, "factor", 1.0, source, where);
    // Hugging Face uses max_position_embeddings as the original length unless given.
    s.original_max_position_embeddings =
        get_int(r, "original_max_position_embeddings", max_position_embeddings, source, where);
  } else if (type == "llama3") {
    s.type = RopeScaling::Type::llama3;
    for (const char* key : {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
      require(key);
    }
    s.factor = get_double(r, "factor", 1.0, source, where);
    s.low_freq_factor = get_double(r, "low_freq_factor", 1.0, source, where);
    s.high_freq_factor = get_double(r, "high_freq_factor", 4.0, source, where);
    s.original_max_position_embeddings = get_int(r, "original_max_position_embeddings", 0, source, where);
  } else {
    fail(source, "field '" + field + "': rope_type '" + type +
                     "' is not supported (expected default, linear, dynamic or llama3)");
  }
  return s;
}

bool positive_finite(double v) { return std::isfinite(v) && v > 0.0; }

}  // namespace

bool ModelConfig::is_eos(int token) const {
  return std::find(eos_token_ids.begin(), eos_token_ids.end(), token) != eos_token_ids.end();
}

ModelConfig parse_model_config(const json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "config must be a JSON object, got " + type_name(j));
  ModelConfig c;

  // Architecture and model type: model_type selects the Hugging Face config class.
  std::string arch;
  if (present(j, "architectures")) {
    const json& a = j.at("architectures");
    if (!a.is_array() || a.empty() || !a.at(0).is_string()) {
      fail(source, "field 'architectures' must be a non-empty list of strings, got " + a.dump());
    }
    arch = a.at(0).get<std::string>();
  }
  c.model_type = get_string(j, "model_type", "", source);
  if (c.model_type.empty()) c.model_type = model_type_from_architecture(arch);
  if (c.model_type.empty()) {
    fail(source, "neither 'model_type' nor a known 'architectures' entry (LlamaForCausalLM, "
                 "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM) is given");
  }
  const ClassDefaults* d = class_defaults(c.model_type);
  if (d == nullptr) {
    fail(source, "model_type '" + c.model_type + "' is not supported (expected llama, mistral, qwen2 or qwen3)");
  }
  c.architecture = arch.empty() ? d->architecture : arch;

  c.vocab_size = get_int(j, "vocab_size", d->vocab_size, source);
  c.hidden_size = get_int(j, "hidden_size", d->hidden_size, source);
  c.intermediate_size = get_int(j, "intermediate_size", d->intermediate_size, source);
  c.num_hidden_layers = get_int(j, "num_hidden_layers", d->num_hidden_layers, source);
  c.num_attention_heads = get_int(j, "num_attention_heads", d->num_attention_heads, source);
  // Absent: the class default; explicit null (or a class default of None): one KV head per head.
  if (j.contains("num_key_value_heads")) {
    c.num_key_value_heads = get_int(j, "num_key_value_heads", c.num_attention_heads, source);
  } else {
    c.num_key_value_heads = d->num_key_value_heads != 0 ? d->num_key_value_heads : c.num_attention_heads;
  }
  const bool head_dim_given = present(j, "head_dim") || (!j.contains("head_dim") && d->head_dim != 0);
  if (present(j, "head_dim")) {
    c.head_dim = get_int(j, "head_dim", 0, source);
  } else if (head_dim_given) {
    c.head_dim = d->head_dim;
  } else {
    if (c.num_attention_heads <= 0) {
      fail(source, "field 'num_attention_heads' must be positive, got " + std::to_string(c.num_attention_heads));
    }
    if (c.hidden_size % c.num_attention_heads != 0) {
      fail(source, "hidden_size " + std::to_string(c.hidden_size) +
                       " is not divisible by num_attention_heads " + std::to_string(c.num_attention_heads) +
                       " and no 'head_dim' is given");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  c.max_position_embeddings = get_int(j, "max_position_embeddings", d->max_position_embeddings, source);
  c.rms_norm_eps = get_double(j, "rms_norm_eps", 1e-6, source);
  c.tie_word_embeddings = get_bool(j, "tie_word_embeddings", false, source);
  c.hidden_act = get_string(j, "hidden_act", "silu", source);
  c.torch_dtype = get_string(j, "dtype", c.torch_dtype, source);  // transformers v5 spelling
  c.torch_dtype = get_string(j, "torch_dtype", c.torch_dtype, source);

  // Biases and norms per architecture, as the Hugging Face modules build them.
  if (c.model_type == "llama") {
    c.attention_bias = c.o_proj_bias = get_bool(j, "attention_bias", false, source);
    c.mlp_bias = get_bool(j, "mlp_bias", false, source);
  } else if (c.model_type == "qwen2") {
    c.attention_bias = true;  // Qwen2 always biases q/k/v, never o_proj
  } else if (c.model_type == "qwen3") {
    c.attention_bias = c.o_proj_bias = get_bool(j, "attention_bias", false, source);
    c.qk_norm = true;
  }

  // Sliding window: Mistral on every layer (null = none); Qwen2/Qwen3 only when
  // use_sliding_window, on layers >= max_window_layers.
  if (c.model_type == "mistral") {
    c.sliding_window = j.contains("sliding_window") ? get_int(j, "sliding_window", 0, source) : d->sliding_window;
  } else if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    if (get_bool(j, "use_sliding_window", false, source)) {
      c.sliding_window = j.contains("sliding_window") ? get_int(j, "sliding_window", 0, source) : d->sliding_window;
      c.max_window_layers = get_int(j, "max_window_layers", d->max_window_layers, source);
    }
  }
  // transformers v5 writes Qwen2/Qwen3's per-layer attention kinds as 'layer_types' and, when
  // the list is present, follows it rather than max_window_layers (which it only uses to fill in
  // a missing list). specdec expresses windows as "layers >= max_window_layers slide", so a list
  // of that form sets max_window_layers; any other pattern is refused rather than ignored.
  if ((c.model_type == "qwen2" || c.model_type == "qwen3") && present(j, "layer_types")) {
    const json& types = j.at("layer_types");
    if (!types.is_array() || static_cast<int64_t>(types.size()) != c.num_hidden_layers) {
      fail(source, "field 'layer_types' must list one attention type per layer (" +
                       std::to_string(c.num_hidden_layers) + "), got " + types.dump());
    }
    int first_sliding = -1;  // index of the first sliding_attention layer (-1: none)
    for (int i = 0; i < c.num_hidden_layers; ++i) {
      const json& t = types.at(static_cast<std::size_t>(i));
      const bool sliding = t == "sliding_attention";
      if (!sliding && t != "full_attention") {
        fail(source, "field 'layer_types[" + std::to_string(i) + "]' is " + t.dump() +
                         "; expected \"full_attention\" or \"sliding_attention\"");
      }
      if (sliding && first_sliding < 0) first_sliding = i;
      if (!sliding && first_sliding >= 0) {
        fail(source, "field 'layer_types' has full_attention layer " + std::to_string(i) + " after sliding_attention layer " +
                         std::to_string(first_sliding) + "; only full layers followed by sliding layers (max_window_layers) are supported");
      }
    }
    if (first_sliding >= 0 && c.sliding_window == 0) {
      fail(source, "field 'layer_types' marks layer " + std::to_string(first_sliding) +
                       " as sliding_attention but no window is set (use_sliding_window false or sliding_window null)");
    }
    c.max_window_layers = first_sliding < 0 ? c.num_hidden_layers : first_sliding;
  }
  if (c.sliding_window == 0) c.max_window_layers = 0;

  // Special tokens.
  c.bos_token_id = j.contains("bos_token_id") ? get_int(j, "bos_token_id", -1, source) : d->bos_token_id;
  if (!j.contains("eos_token_id")) {
    if (d->eos_token_id >= 0) c.eos_token_ids = {d->eos_token_id};
  } else if (j.at("eos_token_id").is_array()) {
    const json& list = j.at("eos_token_id");
    for (std::size_t i = 0; i < list.size(); ++i) {
      c.eos_token_ids.push_back(json_to_int(list.at(i), "eos_token_id[" + std::to_string(i) + "]", source));
    }
  } else if (!j.at("eos_token_id").is_null()) {
    c.eos_token_ids = {get_int(j, "eos_token_id", -1, source)};
  }

  // RoPE: rope_theta + rope_scaling (either spelling of the type), or transformers v5's
  // rope_parameters {rope_type, rope_theta, ...}.
  c.rope_theta = get_double(j, "rope_theta", 10000.0, source);
  const bool has_scaling = present(j, "rope_scaling");
  const bool has_parameters = present(j, "rope_parameters");
  if (has_scaling) {
    c.rope_scaling = parse_rope_object(j.at("rope_scaling"), "rope_scaling", c.max_position_embeddings, source, nullptr);
  }
  if (has_parameters) {
    double theta = c.rope_theta;
    const RopeScaling p =
        parse_rope_object(j.at("rope_parameters"), "rope_parameters", c.max_position_embeddings, source, &theta);
    if (has_scaling && !(p == c.rope_scaling)) {
      fail(source, "fields 'rope_scaling' and 'rope_parameters' describe different RoPE scalings");
    }
    if (present(j, "rope_theta") && theta != c.rope_theta) {
      fail(source, "field 'rope_theta' (" + j.at("rope_theta").dump() + ") and 'rope_parameters.rope_theta' (" +
                       j.at("rope_parameters").at("rope_theta").dump() + ") disagree");
    }
    c.rope_scaling = p;
    c.rope_theta = theta;
  }

  validate_model_config(c, source);
  return c;
}

ModelConfig load_model_config(const std::filesystem::path& config_json) {
  const json j = read_json_file(config_json.string(), "model config");
  return parse_model_config(j, config_json.string());
}

void validate_model_config(const ModelConfig& c, const std::string& source) {
  if (c.architecture.empty()) fail(source, "field 'architectures' is empty");
  if (class_defaults(c.model_type) == nullptr) {
    fail(source, "model_type '" + c.model_type + "' is not supported (expected llama, mistral, qwen2 or qwen3)");
  }
  const std::pair<const char*, int> sizes[] = {
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.intermediate_size},
      {"num_hidden_layers", c.num_hidden_layers},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_key_value_heads},
      {"head_dim", c.head_dim},
      {"vocab_size", c.vocab_size},
      {"max_position_embeddings", c.max_position_embeddings},
  };
  for (const auto& [name, value] : sizes) {
    if (value <= 0) fail(source, std::string("field '") + name + "' must be positive, got " + std::to_string(value));
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    fail(source, "num_attention_heads " + std::to_string(c.num_attention_heads) +
                     " is not a multiple of num_key_value_heads " + std::to_string(c.num_key_value_heads));
  }
  if (c.head_dim % 2 != 0) {
    fail(source, "field 'head_dim' must be even (RoPE rotates pairs), got " + std::to_string(c.head_dim));
  }
  // Projection widths and the embedding table must be addressable.
  const int64_t q_dim = int64_t{c.num_attention_heads} * c.head_dim;
  if (q_dim > INT_MAX) {
    fail(source, "num_attention_heads x head_dim = " + std::to_string(q_dim) + " is too large");
  }
  if (int64_t{c.vocab_size} * c.hidden_size > (int64_t{1} << 40) ||
      int64_t{c.intermediate_size} * c.hidden_size > (int64_t{1} << 40)) {
    fail(source, "vocab_size, hidden_size or intermediate_size is implausibly large");
  }
  if (!positive_finite(c.rms_norm_eps)) {
    fail(source, "field 'rms_norm_eps' must be a positive number, got " + std::to_string(c.rms_norm_eps));
  }
  if (!positive_finite(c.rope_theta)) {
    fail(source, "field 'rope_theta' must be a positive number, got " + std::to_string(c.rope_theta));
  }
  if (c.hidden_act != "silu" && c.hidden_act != "swish") {
    fail(source, "field 'hidden_act' is '" + c.hidden_act + "'; only 'silu' is supported");
  }
  const RopeScaling& r = c.rope_scaling;
  if (r.type != RopeScaling::Type::none) {
    if (!std::isfinite(r.factor) || r.factor < 1.0) {
      fail(source, "field 'rope_scaling.factor' must be >= 1, got " + std::to_string(r.factor));
    }
    if (r.type != RopeScaling::Type::linear && r.original_max_position_embeddings <= 0) {
      fail(source, "field 'rope_scaling.original_max_position_embeddings' must be positive, got " +
                       std::to_string(r.original_max_position_embeddings));
    }
  }
  if (r.type == RopeScaling::Type::llama3) {
    if (!positive_finite(r.low_freq_factor)) {
      fail(source, "field 'rope_scaling.low_freq_factor' must be positive, got " + std::to_string(r.low_freq_factor));
    }
    if (!std::isfinite(r.high_freq_factor) || r.high_freq_factor <= r.low_freq_factor) {
      fail(source, "field 'rope_scaling.high_freq_factor' (" + std::to_string(r.high_freq_factor) +
                       ") must be greater than low_freq_factor (" + std::to_string(r.low_freq_factor) + ")");
    }
  }
  if (c.sliding_window < 0) {
    fail(source, "field 'sliding_window' must be positive or null, got " + std::to_string(c.sliding_window));
  }
  if (c.max_window_layers < 0) {
    fail(source, "field 'max_window_layers' must not be negative, got " + std::to_string(c.max_window_layers));
  }
  if (c.bos_token_id < -1) {
    fail(source, "field 'bos_token_id' must not be negative, got " + std::to_string(c.bos_token_id));
  }
  for (int eos : c.eos_token_ids) {
    if (eos < 0) fail(source, "field 'eos_token_id' must not be negative, got " + std::to_string(eos));
  }
  // Bias and norm flags must be ones the architecture can express, so that a saved config.json
  // loads back into the same model.
  const std::string& t = c.model_type;
  if (c.qk_norm != (t == "qwen3")) {
    fail(source, std::string("q/k norm is ") + (c.qk_norm ? "set" : "missing") + " for model_type '" + t +
                     "' (Qwen3 always has it, the others never)");
  }
  if (t == "qwen2" && (!c.attention_bias || c.o_proj_bias)) {
    fail(source, "model_type 'qwen2' always has q/k/v biases and no o_proj bias");
  }
  if ((t == "llama" || t == "qwen3") && c.o_proj_bias != c.attention_bias) {
    fail(source, "model_type '" + t + "': attention_bias biases q, k, v and o_proj together");
  }
  if (t == "mistral" && (c.attention_bias || c.o_proj_bias)) {
    fail(source, "model_type 'mistral' has no attention biases");
  }
  if (c.mlp_bias && t != "llama") {
    fail(source, "mlp_bias is only available for model_type 'llama', not '" + t + "'");
  }
}

json model_config_to_json(const ModelConfig& c) {
  json j;
  j["architectures"] = json::array({c.architecture});
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  const RopeScaling& r = c.rope_scaling;
  switch (r.type) {
    case RopeScaling::Type::none:
      j["rope_scaling"] = nullptr;
      break;
    case RopeScaling::Type::linear:
      j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", r.factor}};
      break;
    case RopeScaling::Type::dynamic:
      j["rope_scaling"] = {{"rope_type", "dynamic"},
                           {"factor", r.factor},
                           {"original_max_position_embeddings", r.original_max_position_embeddings}};
      break;
    case RopeScaling::Type::llama3:
      j["rope_scaling"] = {{"rope_type", "llama3"},
                           {"factor", r.factor},
                           {"low_freq_factor", r.low_freq_factor},
                           {"high_freq_factor", r.high_freq_factor},
                           {"original_max_position_embeddings", r.original_max_position_embeddings}};
      break;
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (c.model_type == "llama") {
    j["attention_bias"] = c.attention_bias;
    j["mlp_bias"] = c.mlp_bias;
  } else if (c.model_type == "qwen3") {
    j["attention_bias"] = c.attention_bias;
  }
  if (c.model_type == "mistral") {
    j["sliding_window"] = c.sliding_window > 0 ? json(c.sliding_window) : json(nullptr);
  } else if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    j["use_sliding_window"] = c.sliding_window > 0;
    j["sliding_window"] = c.sliding_window > 0 ? json(c.sliding_window) : json(nullptr);
    j["max_window_layers"] = c.max_window_layers;
  }
  j["hidden_act"] = c.hidden_act;
  j["bos_token_id"] = c.bos_token_id >= 0 ? json(c.bos_token_id) : json(nullptr);
  if (c.eos_token_ids.empty()) {
    j["eos_token_id"] = nullptr;
  } else if (c.eos_token_ids.size() == 1) {
    j["eos_token_id"] = c.eos_token_ids.front();
  } else {
    j["eos_token_id"] = c.eos_token_ids;
  }
  j["torch_dtype"] = c.torch_dtype;
  j["use_cache"] = true;
  j["initializer_range"] = 0.02;
  j["attention_dropout"] = 0.0;
  return j;
}

void save_model_config(const std::filesystem::path& config_json, const ModelConfig& c) {
  validate_model_config(c, config_json.string());
  write_file_atomically(config_json, model_config_to_json(c).dump(2) + "\n");
}

}  // namespace specdec
