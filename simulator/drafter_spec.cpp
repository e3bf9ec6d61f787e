#include "simulator/drafter_spec.hpp"

#include "reference/core/error.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "simulator/plan_json.hpp"
#include "simulator/spec_json.hpp"
#include "simulator/tree_shape.hpp"

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
  check_known_fields(c, {"kind", "alpha", "acceptance", "acceptance_by_depth", "acceptance_table", "tree_acceptance",
                         "tree", "dynamic_tree", "al", "match_rate", "setup"},
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
  for (const char* f :
       {"alpha", "acceptance", "acceptance_by_depth", "acceptance_table", "tree_acceptance", "tree", "dynamic_tree"})
    forms += has_field(c, f);
  if (forms != 1)
    throw Error(where + ": give exactly one of 'alpha', 'acceptance', 'acceptance_by_depth', 'acceptance_table', "
                "'tree_acceptance', or 'tree' or 'dynamic_tree' with 'al' (got " + std::to_string(forms) + ")");
  if (has_field(c, "al") != (has_field(c, "tree") || has_field(c, "dynamic_tree")))
    throw Error(where + ": 'tree' (a built-in tree's name) or 'dynamic_tree' ([total_tokens, depth, top_k]) and 'al' (the "
                "AL measured on it, counting the bonus token) go together");
  try {
    if (has_field(c, "dynamic_tree")) {
      // An AL measured on a dynamic (EAGLE-2) setting belongs to exactly that setting.
      const nlohmann::json& t = c.at("dynamic_tree");
      if (!t.is_array() || t.size() != 3)
        throw Error(where + ": field 'dynamic_tree' must be [total_tokens, depth, top_k], e.g. [60, 7, 10]");
      for (const auto& v : t) {
        if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > kMaxDraftNodes)
          throw Error(where + ": field 'dynamic_tree' must hold integers in [1, " + std::to_string(kMaxDraftNodes) +
                      "], got " + t.dump());
        a.dynamic_tree.push_back(v.get<int>());
      }
      DraftPlan check;
      set_measured_dynamic_tree(check, a.dynamic_tree[0], a.dynamic_tree[1], a.dynamic_tree[2]);  // the bounds
      a.al = get_number(c, "al", where);
      if (!(a.al >= 1.0 && a.al <= a.dynamic_tree[1] + 1.0))
        throw Error(where + ": 'al' must be in [1, " + std::to_string(a.dynamic_tree[1] + 1) + "] (the dynamic tree's depth is " +
                    std::to_string(a.dynamic_tree[1]) + "; the AL counts the bonus token), got " + std::to_string(a.al));
    } else if (has_field(c, "tree")) {
      // A measured AL belongs to exactly the tree it was measured on.
      a.tree = get_string(c, "tree", where);
      const TreeShape t = builtin_tree(a.tree);
      a.al = get_number(c, "al", where);
      if (!(a.al >= 1.0 && a.al <= t.max_depth() + 1.0))
        throw Error(where + ": 'al' must be in [1, " + std::to_string(t.max_depth() + 1) + "] (the tree '" + a.tree +
                    "' has depth " + std::to_string(t.max_depth()) + "; the AL counts the bonus token), got " +
                    std::to_string(a.al));
    } else if (has_field(c, "tree_acceptance")) {
      const auto& t = c.at("tree_acceptance");
      if (!t.is_array() || t.empty())
        throw Error(where + ": field 'tree_acceptance' must be a list (per depth) of lists (per rank) of probabilities");
      std::vector<std::vector<double>> p;
      for (const auto& row : t) p.push_back(number_list(row, where + ": field 'tree_acceptance'"));
      a.model = tree_acceptance(p);
    } else if (has_field(c, "alpha")) {
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

std::string CategoryAcceptance::tree_label() const {
  if (!tree.empty()) return "tree '" + tree + "'";
  if (dynamic_tree.size() == 3)
    return "dynamic tree " + std::to_string(dynamic_tree[0]) + "/" + std::to_string(dynamic_tree[1]) + "/" +
           std::to_string(dynamic_tree[2]);
  return "";
}

AcceptancePtr CategoryAcceptance::acceptance(const std::string& method) const {
  if (!model) return nullptr;  // a measured tree AL: no model to answer other shapes
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
                         "num_modules", "num_heads", "model", "config", "categories", "default_category", "not_priced"},
                     source);
  DrafterSpec d;
  d.name = get_string(j, "name", source);
  d.source = get_string_or(j, "source", source, source);
  d.method = parse_method(get_string(j, "method", source), source + " (field 'method')");
  if (d.method == Method::sequential) throw Error(source + ": a drafter's method cannot be 'sequential'");
  d.target = get_string_or(j, "target", "", source);
  if (draft_free(d.method)) {
    for (const char* f : {"num_layers", "draft_vocab_size", "trained_depth", "model", "config", "default_category"})
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
  const bool mtp = d.method == Method::mtp, medusa = d.method == Method::medusa;
  d.not_priced = get_string_or(j, "not_priced", "", source);
  if (has_field(j, "categories")) {
    const auto& cats = j.at("categories");
    if (!cats.is_object()) throw Error(source + ": field 'categories' must be an object {category: acceptance}");
    for (const auto& [name, c] : cats.items()) {
      if (name.rfind('_', 0) == 0) continue;
      d.categories.emplace(name, parse_category(name, c, source));
    }
  }
  d.default_category = get_string_or(j, "default_category", "", source);
  if (!d.default_category.empty() && !d.categories.count(d.default_category))
    throw Error(source + ": field 'default_category' names '" + d.default_category + "', which is not one of its categories (" +
                d.category_list() + ")");
  // Fields that belong to other drafter kinds are refused by name, so a spec of one kind given
  // with another's fields (a Medusa spec's num_heads on an MTP spec) is caught at once.
  auto refuse = [&](const char* field, const std::string& belongs) {
    if (has_field(j, field))
      throw Error(source + ": field '" + field + "' is for " + belongs + ", not a " + method_name(d.method) + " drafter");
  };
  if (!mtp) refuse("num_modules", "MTP drafters (modules in the checkpoint)");
  if (!medusa) refuse("num_heads", "Medusa drafters (heads in the checkpoint)");
  if (mtp || medusa) {
    refuse("draft_vocab_size", std::string("drafters with a draft vocabulary (EAGLE-3, P-EAGLE, EAGLE-1 heads on a "
                                           "frequency-ranked subset); ") +
                                   (mtp ? "an MTP module" : "a Medusa head") + " drafts over the target's whole vocabulary");
    refuse("trained_depth", "P-EAGLE drafters");
    refuse("model", "draft-model drafters");
  }
  d.num_layers = get_int_or(j, "num_layers", 1, source);
  if (d.num_layers < (medusa ? 0 : 1))
    throw Error(source + ": field 'num_layers' must be >= " + (medusa ? "0 (residual blocks per Medusa head)" : "1"));
  // As many layers as the deepest target (validate_model_shape's bound); real heads have 1 to 4.
  if (d.num_layers > 4096)
    throw Error(source + ": field 'num_layers' is " + std::to_string(d.num_layers) + ", more than the simulator supports (4096)");
  if (mtp && d.num_layers != 1)
    throw Error(source + ": an MTP module is one decoder layer of the target's kind (num_layers = " +
                std::to_string(d.num_layers) + "); several modules are 'num_modules'");
  if (mtp) {
    d.num_modules = get_int_or(j, "num_modules", 1, source);
    if (d.num_modules < 1 || d.num_modules > 64)
      throw Error(source + ": field 'num_modules' must be in [1, 64] (MTP modules in the checkpoint), got " +
                  std::to_string(d.num_modules));
  }
  if (medusa) {
    d.num_heads = get_int(j, "num_heads", source);
    if (d.num_heads < 1 || d.num_heads > 64)
      throw Error(source + ": field 'num_heads' must be in [1, 64] (Medusa heads in the checkpoint), got " +
                  std::to_string(d.num_heads));
  }
  if ((d.method == Method::eagle1 || d.method == Method::eagle3) && d.num_layers != 1)
    throw Error(source + ": " + method_name(d.method) + " heads have exactly 1 layer (num_layers = " +
                std::to_string(d.num_layers) + "); multi-layer parallel drafters are method 'peagle'");
  d.draft_vocab_size = get_int_in(j, "draft_vocab_size", 0, 0, 1 << 24, source);
  // A depth no proposer drafts (reference/drafting/draft_limits.hpp) is no depth a head was trained for.
  d.trained_depth = get_int_in(j, "trained_depth", 0, 0, kMaxDraftDepth, source);
  d.model = get_string_or(j, "model", "", source);
  if (d.method == Method::draft_model && d.model.empty())
    throw Error(source + ": a draft_model drafter needs field 'model' (a model spec name or config.json path)");
  if (has_field(j, "config")) {
    d.config = j.at("config");
    if (!d.config.is_object()) throw Error(source + ": field 'config' must be an object of shape overrides");
    if (mtp || medusa)
      check_known_fields(d.config, {"hidden_size", "vocab_size"}, source + " (config: the target's sizes, checked; " +
                                                                      method_name(d.method) + " takes its shapes from the target)");
    else
      check_known_fields(d.config, {"hidden_size", "intermediate_size", "num_attention_heads",
                                    "num_key_value_heads", "head_dim", "vocab_size", "torch_dtype"},
                         source + " (config)");
  }
  return d;
}

DrafterSpec load_drafter_spec(const std::filesystem::path& path) {
  return parse_drafter_spec(read_json_file(path, "drafter spec"), path.filename().string());
}

namespace {

// MTP modules and Medusa heads ship with their target: their shapes are the target's (an MTP
// module's decoder layer is one of the target's own kind, MoE included; Medusa's blocks are H × H
// and its projections H × V), so a spec only checks that the target is the one they were trained
// with (its hidden size and vocabulary, config.hidden_size / config.vocab_size).
Drafter resolve_target_drafter(const DrafterSpec& spec, const ModelShape& target, Drafter d) {
  const std::string where = "drafter '" + spec.name + "'";
  const std::string kind = spec.method == Method::mtp ? "an MTP module" : "Medusa heads";
  const auto& c = spec.config;
  for (const char* field : {"hidden_size", "vocab_size"}) {
    if (!c.is_object() || !has_field(c, field)) continue;
    const int want = get_int(c, field, where + " (config)");
    const int have = std::string(field) == "hidden_size" ? target.hidden_size : target.vocab_size;
    if (want != have)
      throw Error(where + ": " + kind + (spec.method == Method::mtp ? " ships" : " ship") + " with its target" + (spec.target.empty() ? "" : " (" + spec.target + ")") +
                  " and takes its shapes from it: it was trained for " + field + " " + std::to_string(want) +
                  ", the target '" + target.name + "' has " + std::to_string(have));
  }
  ModelShape s = target;
  s.name = spec.name;
  s.source = spec.source;
  d.shape = s;
  d.lm_head_vocab = target.vocab_size;
  if (spec.method == Method::mtp) {
    // One decoder layer of the target's kind (dense or MoE, its attention), full attention: the
    // modules of DeepSeek-V3, GLM-4.5, Qwen3-Next and MiMo attend over the whole context.
    d.shape.sliding_window = 0;
    d.shape.sliding_layer_fraction = 0;
    d.shape.num_layers = 1;
    d.shape.dense_layers = 0;  // the module's layer is one of the target's last (MoE) kind
    d.num_layers = 1;
    d.num_modules = spec.num_modules > 0 ? spec.num_modules : 1;
    d.fc_in = 2 * target.hidden_size;  // eh_proj: concat[enorm(emb), hnorm(h)] (2H) -> H
    d.qkv_in = target.hidden_size;
  } else {
    d.num_heads = spec.num_heads;
    d.num_layers = spec.num_layers;  // residual blocks per head (medusa_num_layers)
  }
  return d;
}

}  // namespace

Drafter resolve_drafter(const DrafterSpec& spec, const ModelShape& target, const ModelShape* draft_model_shape) {
  const std::string where = "drafter '" + spec.name + "'";
  Drafter d;
  d.name = spec.name;
  d.target = spec.target;
  d.method = spec.method;
  if (draft_free(spec.method)) {
    d.draft_free = true;
    d.num_layers = 0;
    return d;
  }
  d.num_layers = spec.num_layers;
  d.trained_depth = spec.trained_depth;
  if (!spec.not_priced.empty()) throw Error(where + " cannot be priced: " + spec.not_priced);
  if (spec.method == Method::mtp || spec.method == Method::medusa) return resolve_target_drafter(spec, target, d);
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
  s.expert_load_cv = 0;
  s.experts_per_token = 0;
  s.expert_intermediate_size = 0;
  s.shared_expert_intermediate_size = 0;
  s.precision_of(WeightClass::routed_experts) = {};
  s.dense_layers = 0;
  s.sliding_window = 0;
  s.sliding_layer_fraction = 0;
  if (target.is_moe() && s.intermediate_size <= 0) s.intermediate_size = target.expert_intermediate_size;
  const auto& c = spec.config;
  const std::string cs = where + " (config)";
  if (target.is_mla()) {
    // ... and Llama-style grouped-query attention even for a latent-attention target, whose shape
    // cannot give the head's heads: the spec's config gives them.
    s.q_lora_rank = s.kv_lora_rank = s.qk_nope_head_dim = s.qk_rope_head_dim = s.v_head_dim = 0;
    if (!c.is_object() || !has_field(c, "num_attention_heads") || !has_field(c, "num_key_value_heads") ||
        !has_field(c, "head_dim"))
      throw Error(where + ": target '" + target.name + "' uses multi-head latent attention, and an " + method_name(spec.method) +
                  " head is a Llama-style layer with grouped-query attention: give the head's num_attention_heads, "
                  "num_key_value_heads and head_dim in the spec's config");
  }
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
      // The target's LM head: all its rows, or a frequency-ranked subset of draft_vocab_size rows
      // sliced out of it (FR-Spec; SGLang's --speculative-token-map), held as a copy of its own.
      d.lm_head_vocab = vd;
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
