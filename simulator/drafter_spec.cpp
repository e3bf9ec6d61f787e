#include "simulator/drafter_spec.hpp"

#include "reference/core/error.hpp"
#include "simulator/spec_json.hpp"

namespace specdec::sim {

namespace {

std::vector<double> number_list(const nlohmann::json& v, const std::string& where) {
  if (!v.is_array() || v.empty()) throw Error(where + " must be a non-empty list of numbers");
  std::vector<double> out;
  for (const auto& x : v) {
    if (!x.is_number()) throw Error(where + " must hold numbers, got " + x.dump());
    out.push_back(x.get<double>());
  }
  return out;
}

CategoryAcceptance parse_category(const std::string& name, const nlohmann::json& c, const std::string& source) {
  const std::string where = source + " (categories." + name + ")";
  if (!c.is_object())
    throw Error(where + ": must be an object {description, kind, source, one of alpha | acceptance | "
                "acceptance_by_depth | acceptance_table, match_rate}");
  check_known_fields(c, {"kind", "alpha", "acceptance", "acceptance_by_depth", "acceptance_table", "match_rate", "setup"},
                     where);
  CategoryAcceptance a;
  a.name = name;
  a.description = get_string_or(c, "description", "", where);
  a.kind = get_string(c, "kind", where);
  if (a.kind != "measured" && a.kind != "prior")
    throw Error(where + ": field 'kind' must be \"measured\" (say by whom in 'source') or \"prior\" (an assumption; say "
                "whose in 'source'), got \"" + a.kind + "\"");
  a.source = get_string_or(c, "source", "", where);
  if (a.source.empty()) throw Error(where + ": field 'source' is required: who measured these numbers, or whose prior they are");
  int forms = 0;
  for (const char* f : {"alpha", "acceptance", "acceptance_by_depth", "acceptance_table"}) forms += has_field(c, f);
  if (forms != 1)
    throw Error(where + ": give exactly one of 'alpha', 'acceptance', 'acceptance_by_depth', 'acceptance_table' (got " +
                std::to_string(forms) + ")");
  try {
    if (has_field(c, "alpha")) {
      a.model = iid_acceptance(get_number(c, "alpha", where));
    } else if (has_field(c, "acceptance")) {
      a.model = conditional_acceptance(number_list(c.at("acceptance"), where + ": field 'acceptance'"));
    } else if (has_field(c, "acceptance_by_depth")) {
      a.model = acceptance_by_depth(number_list(c.at("acceptance_by_depth"), where + ": field 'acceptance_by_depth'"));
    } else {
      const auto& t = c.at("acceptance_table");
      if (!t.is_object() || t.empty())
        throw Error(where + ": field 'acceptance_table' must be an object {\"K\": AL, ...}");
      std::map<int, double> al;
      for (const auto& [k, v] : t.items()) {
        size_t used = 0;
        int kk = 0;
        try {
          kk = std::stoi(k, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != k.size() || !v.is_number())
          throw Error(where + ": field 'acceptance_table' maps K (an integer key) to AL (a number), got \"" + k + "\": " + v.dump());
        al[kk] = v.get<double>();
      }
      a.model = table_acceptance(al);
    }
  } catch (const Error& e) {
    const std::string what = e.what();
    throw Error(what.rfind(where, 0) == 0 ? what : where + ": " + what);
  }
  if (has_field(c, "match_rate")) {
    const double h = get_number(c, "match_rate", where);
    if (!(h >= 0 && h <= 1)) throw Error(where + ": field 'match_rate' must be in [0, 1] (the share of steps that draft)");
    a.match_rate = h;
  }
  return a;
}

}  // namespace

AcceptancePtr CategoryAcceptance::acceptance(const std::string& method) const {
  AcceptancePtr m = match_rate ? with_match_rate(model, *match_rate) : model;
  return described_acceptance(m, "category '" + name + "' of " + method + " (" + kind + ")");
}

const CategoryAcceptance& DrafterSpec::category(const std::string& want) const {
  auto it = categories.find(want);
  if (it != categories.end()) return it->second;
  throw Error("drafter '" + name + "' has no prompt category '" + want + "'; it has: " + category_list());
}

std::string DrafterSpec::category_list() const {
  std::string s;
  for (const auto& [n, c] : categories) s += (s.empty() ? "" : ", ") + n + " (" + c.kind + ")";
  return s.empty() ? "none" : s;
}

DrafterSpec parse_drafter_spec(const nlohmann::json& j, const std::string& source) {
  check_known_fields(j, {"name", "method", "target", "num_layers", "draft_vocab_size", "trained_depth",
                         "model", "config", "categories"},
                     source);
  DrafterSpec d;
  d.name = get_string(j, "name", source);
  d.source = get_string_or(j, "source", source, source);
  d.method = parse_method(get_string(j, "method", source), source + " (field 'method')");
  if (d.method == Method::sequential) throw Error(source + ": a drafter's method cannot be 'sequential'");
  d.target = get_string_or(j, "target", "", source);
  if (draft_free(d.method)) {
    for (const char* f : {"num_layers", "draft_vocab_size", "trained_depth", "model", "config"})
      if (has_field(j, f))
        throw Error(source + ": method " + method_name(d.method) + " is draft-free (it drafts from the token history, "
                    "no model): field '" + f + "' does not apply");
    if (has_field(j, "categories")) {
      const auto& cats = j.at("categories");
      if (!cats.is_object()) throw Error(source + ": field 'categories' must be an object {category: acceptance}");
      for (const auto& [name, c] : cats.items()) {
        if (name.rfind('_', 0) == 0) continue;
        d.categories.emplace(name, parse_category(name, c, source));
      }
    }
    return d;
  }
  if (has_field(j, "categories"))
    throw Error(source + ": field 'categories' (acceptance by prompt category) is for draft-free methods; a " +
                method_name(d.method) + " drafter's acceptance is given on the command line (--alpha, --acceptance, ...)");
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
  if (draft_free(spec.method)) {
    d.draft_free = true;
    d.num_layers = 0;
    return d;
  }
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
