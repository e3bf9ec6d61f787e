#include "simulator/drafter_spec.hpp"

#include "reference/core/error.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

DrafterSpec parse_drafter_spec(const nlohmann::json& j, const std::string& source) {
  check_known_fields(j, {"name", "method", "target", "num_layers", "draft_vocab_size", "trained_depth",
                         "model", "config"},
                     source);
  DrafterSpec d;
  d.name = get_string(j, "name", source);
  d.source = get_string_or(j, "source", source, source);
  d.method = parse_method(get_string(j, "method", source), source + " (field 'method')");
  if (d.method == Method::sequential) throw Error(source + ": a drafter's method cannot be 'sequential'");
  d.target = get_string_or(j, "target", "", source);
  d.num_layers = get_int_or(j, "num_layers", 1, source);
  if (d.num_layers < 1) throw Error(source + ": field 'num_layers' must be >= 1");
  if ((d.method == Method::eagle1 || d.method == Method::eagle3) && d.num_layers != 1)
    throw Error(source + ": " + method_name(d.method) + " heads have exactly 1 layer (num_layers = " +
                std::to_string(d.num_layers) + "); multi-layer parallel drafters are method 'peagle'");
  d.draft_vocab_size = get_int_or(j, "draft_vocab_size", 0, source);
  if (d.draft_vocab_size < 0) throw Error(source + ": field 'draft_vocab_size' must be >= 0");
  d.trained_depth = get_int_or(j, "trained_depth", 0, source);
  d.model = get_string_or(j, "model", "", source);
  if (d.method == Method::draft_model && d.model.empty())
    throw Error(source + ": a draft_model drafter needs field 'model' (a model spec name or config.json path)");
  if (has_field(j, "config")) {
    d.config = j.at("config");
    if (!d.config.is_object()) throw Error(source + ": field 'config' must be an object of shape overrides");
    check_known_fields(d.config, {"hidden_size", "intermediate_size", "num_attention_heads",
                                  "num_key_value_heads", "head_dim", "vocab_size", "torch_dtype"},
                       source + " (config)");
  }
  return d;
}

DrafterSpec load_drafter_spec(const std::filesystem::path& path) {
  return parse_drafter_spec(read_json_file(path), path.filename().string());
}

Drafter resolve_drafter(const DrafterSpec& spec, const ModelShape& target, const ModelShape* draft_model_shape) {
  const std::string where = "drafter '" + spec.name + "'";
  Drafter d;
  d.name = spec.name;
  d.method = spec.method;
  d.num_layers = spec.num_layers;
  d.trained_depth = spec.trained_depth;
  if (spec.method == Method::draft_model) {
    if (!draft_model_shape) throw Error(where + ": the draft model shape '" + spec.model + "' was not given");
    d.shape = *draft_model_shape;
    d.num_layers = d.shape.num_layers;
    if (d.shape.vocab_size != target.vocab_size)
      throw Error(where + ": draft model vocabulary (" + std::to_string(d.shape.vocab_size) +
                  ") differs from the target's (" + std::to_string(target.vocab_size) +
                  "); draft-model speculation needs a shared tokenizer");
    d.lm_head_vocab = d.shape.vocab_size;
    return d;
  }
  // EAGLE-style head: one target-like layer unless overridden.
  ModelShape s = target;
  s.name = spec.name;
  s.source = spec.source;
  s.num_experts = 0;  // released heads use a dense MLP even for MoE targets
  s.experts_per_token = 0;
  s.expert_intermediate_size = 0;
  s.shared_expert_intermediate_size = 0;
  s.expert_weight_bytes = 0;
  s.sliding_window = 0;
  s.sliding_layer_fraction = 0;
  if (target.is_moe() && s.intermediate_size <= 0) s.intermediate_size = target.expert_intermediate_size;
  const auto& c = spec.config;
  const std::string cs = where + " (config)";
  if (c.is_object()) {
    s.hidden_size = get_int_or(c, "hidden_size", s.hidden_size, cs);
    s.intermediate_size = get_int_or(c, "intermediate_size", s.intermediate_size, cs);
    s.num_heads = get_int_or(c, "num_attention_heads", s.num_heads, cs);
    s.num_kv_heads = get_int_or(c, "num_key_value_heads", s.num_kv_heads, cs);
    s.head_dim = get_int_or(c, "head_dim", s.head_dim, cs);
    if (has_field(c, "vocab_size") && get_int(c, "vocab_size", cs) != target.vocab_size)
      throw Error(where + ": vocab_size " + std::to_string(get_int(c, "vocab_size", cs)) +
                  " differs from the target's " + std::to_string(target.vocab_size));
    if (has_field(c, "torch_dtype")) s.dtype = normalize_dtype(get_string(c, "torch_dtype", cs), cs);
  }
  s.num_layers = spec.num_layers;
  validate_model_shape(s, where);
  d.shape = s;
  const int vd = spec.draft_vocab_size > 0 ? spec.draft_vocab_size : target.vocab_size;
  if (vd > target.vocab_size)
    throw Error(where + ": draft_vocab_size " + std::to_string(vd) + " exceeds the target vocabulary " +
                std::to_string(target.vocab_size));
  switch (spec.method) {
    case Method::eagle1:
      if (s.hidden_size != target.hidden_size)
        throw Error(where + ": EAGLE-1 heads use the target's LM head, so hidden_size must equal the target's (" +
                    std::to_string(target.hidden_size) + "), got " + std::to_string(s.hidden_size));
      d.fc_in = 2 * s.hidden_size;
      d.qkv_in = s.hidden_size;
      d.lm_head_vocab = target.vocab_size;
      break;
    case Method::eagle3:
    case Method::peagle:
      d.fc_in = 3 * target.hidden_size;
      d.qkv_in = 2 * s.hidden_size;
      d.lm_head_vocab = vd;
      break;
    default:
      break;
  }
  return d;
}

}  // namespace specdec::sim
